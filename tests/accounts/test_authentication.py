"""API tokens on the wire: format and checksum, revocation, expiry, last use, CSRF."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient, APIRequestFactory

from accounts import tokens
from accounts.authentication import ApiTokenAuthentication, TokenUser
from accounts.models import ApiToken
from accounts.services import create_api_token

ME = "/api/v1/me"


def _bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_token_caller_is_authenticated_and_request_auth_is_the_token(acme, acme_token):
    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {acme_token}")
    found = ApiTokenAuthentication().authenticate(request)

    assert found is not None
    user, token = found
    assert isinstance(token, ApiToken)
    assert isinstance(user, TokenUser)
    assert user.is_authenticated
    assert not user.is_anonymous
    assert user.organization == acme == token.organization


def test_the_secret_has_the_prefix_and_a_checksum_scanners_can_check(acme_token):
    assert acme_token.startswith("rc_live_")
    assert len(acme_token) == len("rc_live_") + 30 + 6
    assert tokens.is_well_formed(acme_token)
    random_part = acme_token[8:38]
    assert acme_token.endswith(tokens.checksum(random_part))


def test_a_wrong_checksum_is_refused_without_a_database_query(
    acme_token, django_assert_num_queries
):
    tampered = acme_token[:-1] + ("A" if acme_token[-1] != "A" else "B")
    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {tampered}")

    with django_assert_num_queries(0), pytest.raises(Exception, match="Invalid"):
        ApiTokenAuthentication().authenticate(request)


@pytest.mark.parametrize("secret", ["rc_not-a-real-token", "rc_live_short", "ghp_abc", ""])
def test_malformed_tokens_answer_401_problem(db, secret):
    response = _bearer(secret).get(ME)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_token_is_refused(acme_token):
    ApiToken.objects.update(revoked_at=timezone.now())
    assert _bearer(acme_token).get(ME).status_code == 401


def test_an_expired_token_is_refused_and_one_not_yet_expired_works(acme, alice):
    _, live = create_api_token(
        organization=acme,
        created_by=alice,
        name="live",
        expires_at=timezone.now() + timedelta(hours=1),
    )
    _, expiring = create_api_token(
        organization=acme,
        created_by=alice,
        name="expiring",
        expires_at=timezone.now() + timedelta(hours=1),
    )
    ApiToken.objects.filter(name="expiring").update(expires_at=timezone.now() - timedelta(1))

    assert _bearer(live).get(ME).status_code == 200
    assert _bearer(expiring).get(ME).status_code == 401


def test_the_keyword_is_case_insensitive_and_token_works_too(acme_token):
    for keyword in ("bearer", "Token"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{keyword} {acme_token}")
        assert client.get(ME).status_code == 200


def test_last_use_is_recorded_at_most_once_a_minute(acme_token, django_assert_num_queries):
    assert ApiToken.objects.get().last_used_at is None
    client = _bearer(acme_token)
    client.get(ME)
    first = ApiToken.objects.get().last_used_at
    assert first is not None

    client.get(ME)
    assert ApiToken.objects.get().last_used_at == first

    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(minutes=5))
    client.get(ME)
    latest = ApiToken.objects.get().last_used_at
    assert latest is not None
    assert latest > first


def test_session_calls_follow_csrf_rules_and_token_calls_need_none(
    acme, alice, acme_token, session_api
):
    body = {"name": "ci", "scopes": ["diagnoses:write"]}
    with_session = session_api(alice, csrf=True)

    refused = with_session.post("/api/v1/tokens", body, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]

    # A token caller carries no cookie to forge: CSRF does not apply (and tokens cannot mint
    # tokens, which is a 403 of another kind).
    token_client = APIClient(enforce_csrf_checks=True)
    token_client.credentials(HTTP_AUTHORIZATION=f"Bearer {acme_token}")
    answer = token_client.post(
        "/api/v1/organization/domains", {"domain": "acme.example"}, format="json"
    )
    assert answer.status_code == 403
    assert "CSRF" not in answer.json()["detail"]
