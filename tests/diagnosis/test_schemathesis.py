"""schemathesis against the live OpenAPI document: every operation, called through the WSGI app
with an API token on the test PostgreSQL database, answers no 5xx and nothing the document does
not describe (status, content type, headers, body).

Bounded so that `make test` stays fast: a few examples per operation, derandomized (the same
cases on every run: a failure here is a bug, never luck). `-m schemathesis` selects it alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application  # noqa: E402

pytestmark = [pytest.mark.django_db, pytest.mark.schemathesis]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def _connection_kept() -> Iterator[None]:
    """The calls go to the WSGI app itself, whose request signals would close the database
    connection, and with it the test's transaction; Django's test client unhooks them alike."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


# Loaded from the app when the module is collected: generating the document reads no database.
# (schemathesis.pytest.from_fixture would load it per test, but its node renaming does not run on
# pytest 9, which dropped Node._nodeid.)
schema = schemathesis.openapi.from_wsgi("/api/v1/schema", application)


@schema.parametrize()
@pytest.mark.usefixtures("_connection_kept")
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_holds_to_its_schema(case: Any, acme_token: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {acme_token}"}, checks=CHECKS)
