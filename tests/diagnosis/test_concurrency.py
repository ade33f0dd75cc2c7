"""Bounds on concurrent slow requests (plumbing/concurrency.py): long polls and uploads per token
and per address (429 with Retry-After), long polls per process (answered at once past it). The
slots live in the run's Redis; a slot held here stands for a request still running elsewhere."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from django.test import override_settings

from accounts.models import ApiToken
from diagnosis import api as diagnosis_api
from diagnosis import selectors
from plumbing.concurrency import Bound, ProcessSlots, TooManyConcurrent, client_slots
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _address() -> str:
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def _token_pk(acme: Any) -> str:
    return str(ApiToken.objects.get(organization=acme).pk)


def _too_many(response: Any, what: str) -> None:
    assert response.status_code == 429, response.content[:300]
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"].endswith("/too-many-concurrent-requests")
    assert what in body["detail"]
    assert int(response["Retry-After"]) > 0


def _queued(client: Any, address: str) -> str:
    response = client.post(
        URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=address
    )
    assert response.status_code == 202, response.content[:300]
    return str(response["Location"])


@override_settings(CONCURRENT_WAITS_PER_TOKEN=2)
def test_long_polls_past_the_tokens_bound_are_429(acme_api: Any, acme: Any, monkeypatch) -> None:
    monkeypatch.setattr(selectors.time, "sleep", lambda seconds: None)  # waits end at once
    location = _queued(acme_api, _address())  # queued: no worker runs here
    token = Bound(f"waits:token:{_token_pk(acme)}", 2)
    with client_slots([token], hold_seconds=60, what="long polls"):
        # One other long poll of the token is running: there is room for one more.
        assert acme_api.get(f"{location}?wait=1", REMOTE_ADDR=_address()).status_code == 200
        with client_slots([token], hold_seconds=60, what="long polls"):
            _too_many(acme_api.get(f"{location}?wait=1", REMOTE_ADDR=_address()), "long polls")
            # Without `wait` nothing is held, and the answer comes.
            assert acme_api.get(location, REMOTE_ADDR=_address()).status_code == 200
    # Given back: the token may wait again.
    assert acme_api.get(f"{location}?wait=1", REMOTE_ADDR=_address()).status_code == 200


@override_settings(CONCURRENT_WAITS_PER_ADDRESS=1)
def test_long_polls_past_the_address_bound_are_429_whatever_the_token(
    acme_api: Any, monkeypatch
) -> None:
    monkeypatch.setattr(selectors.time, "sleep", lambda seconds: None)
    location = _queued(acme_api, _address())
    address = _address()
    with client_slots([Bound(f"waits:address:{address}", 1)], hold_seconds=60, what="x"):
        _too_many(acme_api.get(f"{location}?wait=1", REMOTE_ADDR=address), "long polls")
        assert acme_api.get(f"{location}?wait=1", REMOTE_ADDR=_address()).status_code == 200


@override_settings(CONCURRENT_UPLOADS_PER_TOKEN=1)
def test_uploads_past_the_tokens_bound_are_429_and_nothing_is_charged(
    acme_api: Any, acme: Any
) -> None:
    with client_slots(
        [Bound(f"uploads:token:{_token_pk(acme)}", 1)], hold_seconds=60, what="uploads"
    ):
        response = acme_api.post(
            URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=_address()
        )
        _too_many(response, "uploads")
        assert response["RateLimit-Remaining"] == response["RateLimit-Limit"]  # nothing charged
    _queued(acme_api, _address())


@override_settings(CONCURRENT_UPLOADS_PER_ADDRESS=1)
def test_a_visitors_uploads_are_bounded_per_address(api: Any) -> None:
    address = _address()
    with client_slots([Bound(f"uploads:address:{address}", 1)], hold_seconds=60, what="x"):
        response = api.post(
            URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=address
        )
        _too_many(response, "uploads")
    _queued(api, address)


def test_a_slot_of_a_process_that_died_expires_by_itself() -> None:
    bound = Bound(f"test:{uuid.uuid4().hex}", 1)
    held = client_slots([bound], hold_seconds=1, what="x")
    held.__enter__()  # never given back, as a killed process leaves it
    with pytest.raises(TooManyConcurrent), client_slots([bound], hold_seconds=60, what="x"):
        pass
    time.sleep(1.1)
    with client_slots([bound], hold_seconds=60, what="x"):
        pass


def test_a_refused_slot_takes_nothing_in_the_other_bounds() -> None:
    free, full = Bound(f"test:{uuid.uuid4().hex}", 1), Bound(f"test:{uuid.uuid4().hex}", 1)
    with client_slots([full], hold_seconds=60, what="x"):
        with (
            pytest.raises(TooManyConcurrent),
            client_slots([free, full], hold_seconds=60, what="x"),
        ):
            pass
        with client_slots([free], hold_seconds=60, what="x"):  # still free
            pass


@override_settings(WAITS_PER_PROCESS=0)
def test_a_process_holding_its_share_of_long_polls_answers_at_once(acme_api: Any, monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(selectors.time, "sleep", slept.append)
    location = _queued(acme_api, _address())

    response = acme_api.get(f"{location}?wait=30", REMOTE_ADDR=_address())

    assert response.status_code == 200
    assert response.json()["status"] == "queued"
    assert slept == []


def test_process_slots_count_their_holders() -> None:
    slots = ProcessSlots()
    with slots.take(1) as first, slots.take(1) as second:
        assert (first, second) == (True, False)
        assert slots.held == 1
    assert slots.held == 0
    assert diagnosis_api.WAITING.held == 0  # no long poll of the other tests left one held


@pytest.mark.django_db(transaction=True)  # committed as in production: enqueued in the request
@override_settings(CONCURRENT_UPLOADS_PER_TOKEN=1)
def test_an_uploads_slot_goes_back_with_its_enqueue(
    acme_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a broker, the slot of an upload whose log is staged goes back in the enqueue's
    script (diagnosis/staging.py), not in a round trip of its own; the token's one slot is free
    for its next upload."""
    from django.conf import settings

    from diagnosis.services import enqueue
    from diagnosis.staging import get_store
    from plumbing.broker import QueuedMessage
    from tests.redis_trips import redis_round_trips

    queue = f"{settings.REDIS_KEY_PREFIX}test-queue-{uuid.uuid4().hex}"
    monkeypatch.setattr(enqueue, "queued_message", lambda i: QueuedMessage(queue, str(i)))
    trips = redis_round_trips(monkeypatch)
    for _ in range(2):
        response = acme_api.post(
            URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=_address()
        )
        assert response.status_code == 202, response.content[:300]
    assert not any("ZREM" in trip for trip in trips)
    store: Any = get_store(settings.REDIS_URL)
    assert store.client.llen(queue) == 2
    store.client.delete(queue)
