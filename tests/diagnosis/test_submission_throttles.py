"""Burst limits on submissions: per client address and per organisation (diagnosis/throttles.py)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from django.core.cache import caches
from django.test import override_settings
from rest_framework.throttling import SimpleRateThrottle

from plumbing import ratelimit
from plumbing.problems import PROBLEM_CONTENT_TYPE
from tests.diagnosis.logs import OOM_LOG
from tests.redis_trips import redis_round_trips

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _address() -> str:
    # The counters live in the shared cache: an address of this test's own.
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def _post(client: Any, address: str) -> Any:
    return client.post(URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=address)


def _throttled(response: Any) -> None:
    assert response.status_code == 429, response.content[:300]
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    assert response.json()["type"].endswith("/throttled")
    assert int(response["Retry-After"]) > 0


@override_settings(THROTTLE_SUBMISSIONS_PER_ADDRESS="2/minute")
def test_submissions_per_address_are_limited(acme_api: Any, umbrella_api: Any) -> None:
    address = _address()
    assert _post(acme_api, address).status_code == 202
    assert _post(umbrella_api, address).status_code == 202
    _throttled(_post(acme_api, address))
    # Another address is not held back by this one.
    assert _post(acme_api, _address()).status_code == 202


@override_settings(THROTTLE_SUBMISSIONS_PER_ORGANIZATION="2/minute")
def test_submissions_per_organisation_are_limited(acme_api: Any, umbrella_api: Any) -> None:
    assert _post(acme_api, _address()).status_code == 202
    assert _post(acme_api, _address()).status_code == 202
    _throttled(_post(acme_api, _address()))
    assert _post(umbrella_api, _address()).status_code == 202


@override_settings(THROTTLE_SUBMISSIONS_PER_ADDRESS="1/minute")
def test_visitors_are_limited_per_address(api: Any) -> None:
    address = _address()
    assert _post(api, address).status_code == 202
    _throttled(_post(api, address))


@override_settings(THROTTLE_SUBMISSIONS_PER_ORGANIZATION="1/minute")
def test_reading_the_history_is_not_a_submission(acme_api: Any) -> None:
    assert _post(acme_api, _address()).status_code == 202
    for _ in range(3):
        assert acme_api.get(URL).status_code == 200


@override_settings(
    THROTTLE_SUBMISSIONS_PER_ADDRESS="1/second", THROTTLE_SUBMISSIONS_PER_ORGANIZATION="3/minute"
)
def test_limits_of_different_windows_are_counted_together_and_each_keeps_its_own(
    acme_api: Any, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [time.time()]
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: clock[0])
    trips = redis_round_trips(monkeypatch)
    address = _address()

    assert _post(acme_api, address).status_code == 202
    # The address' failed tokens and both limits in one script (plumbing/ratelimit.py), which
    # takes the upload's slots of concurrent uploads too (plumbing/concurrency.py), given back
    # in one pipeline; and each log expires after its own window.
    assert trips.count(["EVALSHA"]) == 1
    assert ["ZREM", "ZREM"] in trips
    assert ["MGET"] not in trips
    default: Any = caches["default"]

    def ttl(key: str) -> int:
        return int(default.redis_client().ttl(ratelimit.redis_key(default, key)))

    assert 0 < ttl(f"throttle_submissions-address_{address}") <= 1
    assert 1 < ttl(f"throttle_submissions-organization_{acme.pk}") <= 60
    _throttled(_post(acme_api, address))  # the address' second within its second
    clock[0] += 1.5
    assert _post(acme_api, address).status_code == 202  # its second has passed
    clock[0] += 1.5
    # The organisation's fourth in its minute (the one the address refused counted for it).
    refused = _post(acme_api, address)
    _throttled(refused)
    assert int(refused["Retry-After"]) > 30
