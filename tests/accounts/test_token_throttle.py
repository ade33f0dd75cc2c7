"""Failed API-token authentication is limited per client address (accounts/throttles.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from config.problems import PROBLEM_CONTENT_TYPE

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"


def _address() -> str:
    n = uuid.uuid4().int
    return f"10.{n % 250}.{n // 250 % 250}.{n // 62500 % 250}"


def _get(token: str, address: str) -> Any:
    client = APIClient()
    return client.get(ME, HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address)


@override_settings(THROTTLE_FAILED_TOKENS_PER_ADDRESS="3/minute")
def test_bad_tokens_from_one_address_are_throttled(acme_token: str) -> None:
    address = _address()
    for n in range(3):
        assert _get(f"rc_wrong{n}", address).status_code == 401
    response = _get("rc_wrong", address)
    assert response.status_code == 429
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    assert int(response["Retry-After"]) > 0
    # The right token is refused from that address while the wait lasts, not from another.
    assert _get(acme_token, address).status_code == 429
    assert _get(acme_token, _address()).status_code == 200


@override_settings(THROTTLE_FAILED_TOKENS_PER_ADDRESS="3/minute")
def test_good_tokens_are_not_counted(acme_token: str) -> None:
    address = _address()
    for _ in range(6):
        assert _get(acme_token, address).status_code == 200
