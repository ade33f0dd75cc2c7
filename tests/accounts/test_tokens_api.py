"""/api/v1/tokens: owners and admins mint (secret once), list and revoke; the admin never mints."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tokens
from accounts.models import ApiToken
from accounts.services import create_api_token

TOKENS = "/api/v1/tokens"


def _create(client, **body):
    return client.post(
        TOKENS, {"name": "gitlab", "scopes": ["diagnoses:write"], **body}, format="json"
    )


def test_an_admin_creates_a_token_and_sees_the_secret_once(acme_with_admin, dave, session_api):
    client = session_api(dave)
    expires = (timezone.now() + timedelta(days=30)).isoformat()
    response = _create(client, scopes=["diagnoses:write", "diagnoses:read"], expires_at=expires)

    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    secret = body["secret"]
    assert tokens.is_well_formed(secret)
    assert body["prefix"] == secret[:12]
    assert body["scopes"] == ["diagnoses:read", "diagnoses:write"]
    assert body["created_by"] == "dave@acme.example"
    assert body["active"] is True
    assert body["expires_at"] is not None

    listed = client.get(TOKENS).json()["results"]
    assert [row["id"] for row in listed] == [body["id"]]
    assert "secret" not in listed[0]
    assert "secret" not in client.get(f"{TOKENS}/{body['id']}").json()

    caller = APIClient()
    caller.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    me = caller.get("/api/v1/me").json()
    assert me["token"]["scopes"] == ["diagnoses:read", "diagnoses:write"]
    assert me["organization"]["id"] == str(acme_with_admin.pk)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"scopes": []}, "scopes"),
        ({"scopes": ["admin:everything"]}, "scopes"),
        ({"name": ""}, "name"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "future"),
    ],
)
def test_bad_token_requests_are_400_problems(acme, alice, session_api, body, message):
    response = _create(session_api(alice), **body)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert message in str(response.json())
    assert not ApiToken.objects.exists()


def test_members_and_tokens_cannot_mint_list_or_revoke(acme, bob, acme_api, session_api):
    token_id = ApiToken.objects.get().id
    for client in (session_api(bob), acme_api):
        assert _create(client).status_code == 403
        assert client.get(TOKENS).status_code == 403
        assert client.delete(f"{TOKENS}/{token_id}").status_code == 403
    assert ApiToken.objects.count() == 1


def test_revoke_refuses_the_token_at_once_and_404s_across_organisations(
    acme, umbrella, alice, charlie, acme_token, acme_api, session_api
):
    token_id = ApiToken.objects.get(organization=acme).id
    assert session_api(charlie).delete(f"{TOKENS}/{token_id}").status_code == 404
    assert session_api(charlie).get(f"{TOKENS}/{token_id}").status_code == 404
    assert acme_api.get("/api/v1/me").status_code == 200

    assert session_api(alice).delete(f"{TOKENS}/{token_id}").status_code == 204

    assert acme_api.get("/api/v1/me").status_code == 401
    row = session_api(alice).get(f"{TOKENS}/{token_id}").json()
    assert row["revoked_at"] is not None
    assert row["active"] is False


def test_the_token_list_has_a_pinned_query_count(
    acme, alice, session_api, django_assert_num_queries
):
    for n in range(5):
        create_api_token(organization=acme, created_by=alice, name=f"ci-{n}")
    client = session_api(alice)
    client.get(TOKENS)

    with django_assert_num_queries(5):  # session, user, membership, count, page (+ creators)
        assert client.get(TOKENS).json()["count"] == 5


def test_the_admin_lists_and_revokes_but_cannot_mint(acme, acme_token, db):
    staff = User.objects.create_superuser("root", "root@rootcause.example", "pw-root-123")
    browser = Client()
    browser.force_login(staff)
    token = ApiToken.objects.get()

    assert browser.get("/admin/accounts/apitoken/").status_code == 200
    assert browser.get("/admin/accounts/apitoken/add/").status_code == 403
    page = browser.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    assert token.digest not in page

    browser.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [str(token.pk)]},
    )
    assert ApiToken.objects.get().revoked_at is not None


def test_tokens_from_before_the_checksum_format_are_revoked_by_the_migration(acme, alice):
    legacy = ApiToken.objects.create(
        organization=acme, created_by=alice, name="old", prefix="rc_abcdefgh", digest="0" * 64
    )
    _, _current = create_api_token(organization=acme, created_by=alice, name="new")
    migration = importlib.import_module("accounts.migrations.0003_apitoken_scopes_expires_at")

    migration.revoke_legacy_tokens(apps, None)

    legacy.refresh_from_db()
    assert legacy.revoked_at is not None
    assert ApiToken.objects.get(name="new").revoked_at is None
