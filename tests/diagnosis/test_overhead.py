"""Per-diagnosis overhead that `make loadtest` found, and the guarantees that cutting it keeps.

Work a submission or a stage repeated for nothing is counted here by what it does (queries, claims,
messages), never by how long it takes: timings live in `make loadtest` and `make bench`.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _touching(queries: CaptureQueriesContext, table: str) -> int:
    return sum(f'"{table}"' in query["sql"] for query in queries.captured_queries)


def test_a_submission_works_out_the_tier_once(acme_api: Any) -> None:
    # The tier takes queries (the organisation's domains, its managers' e-mails): the quota check,
    # the charge and the answer's quota headers share one look.
    with CaptureQueriesContext(connection) as queries:
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    assert _touching(queries, "accounts_domain") == 1
    # ...and the headers still tell the quota as it is after the charge.
    assert response["RateLimit-Limit"] == "3"
    assert response["RateLimit-Remaining"] == "2"
    assert Diagnosis.objects.count() == 1
