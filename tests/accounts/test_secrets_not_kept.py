"""No API token or invitation secret is stored or logged in clear."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

from django.contrib.sessions.models import Session
from django.core import mail
from django.db import connection
from rest_framework.test import APIClient


def _everything_in_the_database() -> str:
    """Every row of every table as text, and the decoded sessions (signed, but not secret)."""
    rows: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT row_to_json(t)::text FROM "{table}" t')  # noqa: S608
            rows.extend(row for (row,) in cursor.fetchall())
    rows.extend(str(session.get_decoded()) for session in Session.objects.all())
    return "\n".join(rows)


def _find(pattern: str, text: str, group: int = 0) -> str:
    match = re.search(pattern, text)
    assert match is not None, text
    return match.group(group)


def test_secrets_are_in_no_row_and_no_log_line(
    acme, alice, charlie, session_api, web, settings, caplog, django_capture_on_commit_callbacks
):
    settings.SITE_URL = "http://testserver"
    caplog.set_level(logging.DEBUG)

    owner = session_api(alice)
    secret = owner.post(
        "/api/v1/tokens", {"name": "ci", "scopes": ["diagnoses:read"]}, format="json"
    ).json()["secret"]
    page = web(alice).post("/settings/tokens/", {"name": "page", "scopes": ["diagnoses:read"]})
    page_secret = _find(r"rc_live_[0-9A-Za-z]{36}", page.content.decode())
    caller = APIClient()
    caller.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert caller.get("/api/v1/me").status_code == 200
    tampered = secret[:-1] + ("x" if secret[-1] != "x" else "y")
    caller.credentials(HTTP_AUTHORIZATION=f"Bearer {tampered}")
    assert caller.get("/api/v1/me").status_code == 401

    with django_capture_on_commit_callbacks(execute=True):
        owner.post(
            "/api/v1/organization/invitations",
            {"email": "charlie@umbrella.example"},
            format="json",
        )
    link = _find(r"accept/\?token=(\S+)", str(mail.outbox[-1].body), group=1)
    invitation_token = unquote(link)
    browser = web(charlie)
    browser.get("/accounts/invitations/accept/", {"token": invitation_token})
    assert (
        browser.post("/accounts/invitations/accept/", {"token": invitation_token}).status_code
        == 302
    )

    stored = _everything_in_the_database()
    logged = caplog.text + "\n".join(str(record.__dict__) for record in caplog.records)
    assert "rootcause.request" in logged  # the request log lines were captured
    for value in (secret, page_secret, invitation_token, link):
        assert value not in stored
        assert value not in logged
    # Nor the random part alone, in case something stored the secret minus its prefix.
    assert secret[8:38] not in stored
