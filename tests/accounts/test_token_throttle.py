"""Failed API-token authentication is limited per client address (accounts/throttles.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from plumbing.problems import PROBLEM_CONTENT_TYPE

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


@override_settings(THROTTLE_FAILED_TOKENS_PER_ADDRESS="2/minute")
def test_a_submission_reads_the_failures_with_its_burst_limits_and_still_refuses_a_right_guess(
    acme_token: str,
) -> None:
    # The submission view reads the address' failures in the same cache round trip as its burst
    # limits, after the token lookup: a right token during the wait must still be refused, with
    # the same answer as a wrong one (no quota of its organisation), and nothing charged.
    from diagnosis.models import Diagnosis
    from tests.diagnosis.logs import OOM_LOG

    address = _address()

    def post(token: str, at: str = address) -> Any:
        return APIClient().post(
            "/api/v1/diagnoses",
            data=OOM_LOG.encode(),
            content_type="text/plain",
            HTTP_AUTHORIZATION=f"Bearer {token}",
            REMOTE_ADDR=at,
        )

    assert post("rc_wrong1").status_code == 401
    assert post("rc_wrong2").status_code == 401
    wrong, right = post("rc_wrong3"), post(acme_token)
    assert (wrong.status_code, right.status_code) == (429, 429)
    assert right["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    assert int(right["Retry-After"]) > 0
    for header in ("RateLimit-Limit", "RateLimit-Remaining"):
        assert right.get(header) == wrong.get(header)
    assert Diagnosis.objects.count() == 0
    # Valid tokens are never counted as failures: from another address it is accepted, again.
    other = _address()
    assert post(acme_token, other).status_code == 202
    assert post(acme_token, other).status_code == 202
