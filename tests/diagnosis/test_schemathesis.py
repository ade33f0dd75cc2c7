"""schemathesis against the live OpenAPI document: every operation, called through the WSGI app
with an API token on the test PostgreSQL database, answers no 5xx and nothing the document does
not describe (status, content type, headers, body); takes what the document allows (positive data:
no 400) and refuses what it does not (negative data: a 4xx).

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
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
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
    positive_data_acceptance,
    negative_data_rejection,
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

# A log is text: a form's `file` is `text/plain` (or an archive) in the document, and a raw
# `application/octet-stream` body a log's bytes, gzip-compressed or not. schemathesis has no
# generator of its own for these and sent an image, or random bytes, for their `format: binary`
# strings; a text file is lines of printable text (one of control characters or NUL bytes is not,
# and is refused as binary: tests/rootcause/test_intake.py).
schemathesis.openapi.media_type(
    "text/plain",
    aliases=["application/octet-stream"],
    strategy=st.lists(
        st.text(st.characters(categories=["L", "M", "N", "P", "S", "Zs"]), max_size=80),
        min_size=1,
        max_size=20,
    ).map(lambda lines: "\n".join(lines).encode() + b"\n"),
)


@schema.parametrize()
@pytest.mark.usefixtures("_connection_kept")
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_holds_to_its_schema(case: Any, acme_token: str) -> None:
    if case.query and case.query.get("cursor"):
        # A cursor is a token only the API makes (the `next` and `previous` of a page; anything
        # else is 400, as docs/api.md says): a made-up one is no valid data the document could
        # describe, as a made-up id is a 404. The pagination tests follow the API's own.
        del case.query["cursor"]
    case.call_and_validate(headers={"Authorization": f"Bearer {acme_token}"}, checks=CHECKS)
