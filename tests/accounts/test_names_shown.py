"""Names people give and others read (an organisation's, a token's) keep no control characters
and no direction-changing or invisible ones (plumbing/text.py), whichever way they come in."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_a_renamed_organisation_cannot_pose_as_another(acme: Any, alice: Any) -> None:
    web = Client()
    web.force_login(alice)
    web.post("/settings/organization/", {"name": "Ac\u200bme\u202e Research\r\nOwner: Mallory"})

    acme.refresh_from_db()
    assert acme.name == "Acme Research Owner: Mallory"
    page = web.get("/settings/").content.decode()
    assert "Acme Research Owner: Mallory" in page
    assert "\u202e" not in page
    assert "\u200b" not in page


def test_an_organisation_name_of_invisible_characters_alone_is_refused(
    acme: Any, alice: Any
) -> None:
    web = Client()
    web.force_login(alice)
    web.post("/settings/organization/", {"name": "\u200b\u202e\u2066"})

    acme.refresh_from_db()
    assert acme.name == "Acme"


def test_a_token_name_is_shown_as_it_reads(acme: Any, alice: Any, session_api: Any) -> None:
    client = session_api(alice)
    created = client.post(
        "/api/v1/tokens",
        {"name": "gitlab\u202e\u2066ci\x1b[2J", "scopes": ["diagnoses:read"]},
        format="json",
    )

    assert created.status_code == 201, created.content
    assert created.json()["name"] == "gitlabci [2J"
    names = [t["name"] for t in client.get("/api/v1/tokens").json()["results"]]
    assert "gitlabci [2J" in names
