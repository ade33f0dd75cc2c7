"""No evaluation code is stored or logged in clear: search every table and every log line."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command
from django.db import connection

from billing_tiers.codes import normalize_code
from billing_tiers.services import approve_evaluation_request, request_evaluation
from tests.billing_tiers.conftest import person

pytestmark = pytest.mark.django_db


def _database_text() -> str:
    chunks: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 (names from introspection)
            chunks.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(chunks)


def test_codes_are_neither_stored_nor_logged_in_clear(
    acme_workplace, alice, alice_api, caplog, settings
):
    settings.DEBUG = True  # Django then logs every SQL statement with its parameters
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django.db.backends")
    out = io.StringIO()
    call_command("issue_evaluation_codes", "--count=2", stdout=out, stderr=io.StringIO())
    codes = out.getvalue().split()
    request = request_evaluation(actor=person(alice, acme_workplace), training="x", team_size=1)
    approve_evaluation_request(request_id=request.id, decided_by=None)
    from django.core import mail

    codes += [line.strip() for line in mail.outbox[0].body.splitlines() if "SCALE-" in line]
    redeemed = alice_api.post("/api/v1/evaluation/redeem", {"code": codes[0]}, format="json")
    assert redeemed.status_code == 201
    wrong = codes[1][:-1] + ("A" if codes[1][-1] != "A" else "B")
    alice_api.post("/api/v1/evaluation/redeem", {"code": wrong}, format="json")
    alice_api.post("/api/v1/evaluation/redeem", {"code": codes[1]}, format="json")

    assert len(codes) == 3
    stored, logged = _database_text(), caplog.text
    assert "evaluation_code" in stored or "billing_tiers" in stored  # the search saw our tables
    assert "INSERT INTO" in logged  # and the SQL log
    for code in [*codes, wrong]:
        for form in (code, code.replace("-", ""), code.split("-", 1)[1]):
            assert form not in stored
            assert form not in logged
        body = normalize_code(code) if code != wrong else wrong.replace("-", "")[5:]
        assert body not in stored
        assert body not in logged
