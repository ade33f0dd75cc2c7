"""The throttles' request logs (plumbing/ratelimit.py): in Redis by one script, or in the cache as
DRF keeps them (the embedded mode); both count and refuse alike."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.test import override_settings
from rest_framework.throttling import SimpleRateThrottle

from plumbing import ratelimit
from plumbing.cache import SharedClientRedisCache
from plumbing.concurrency import Bound, Slot, TooManyConcurrent, client_slots
from plumbing.ratelimit import GateRefused, Window

LOCAL_MEMORY = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


@pytest.fixture(params=["redis", "cache"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "redis":
        assert isinstance(caches["default"], SharedClientRedisCache)
        yield request.param
        return
    with override_settings(CACHES=LOCAL_MEMORY):
        yield request.param


def _window(limit: int | None = 3, seconds: int = 60) -> Window:
    return Window(f"test-ratelimit-{uuid.uuid4().hex}", limit, seconds)


def test_a_log_admits_up_to_its_limit_and_counts_only_what_it_admits(backend: str) -> None:
    window, now = _window(limit=2), time.time()

    seen = [ratelimit.count([window], now + n)[0] for n in range(4)]

    assert [s.count for s in seen] == [0, 1, 2, 2]
    assert [s.admits(window) for s in seen] == [True, True, False, False]
    assert seen[3].oldest == pytest.approx(now)


def test_a_request_refused_by_one_log_still_counts_in_the_others(backend: str) -> None:
    tight, loose, now = _window(limit=1), _window(limit=10), time.time()
    ratelimit.count([tight, loose], now)

    refused, admitted = ratelimit.count([tight, loose], now + 1)

    assert not refused.admits(tight)
    assert admitted.admits(loose)
    assert ratelimit.count([loose], now + 2)[0].count == 2


def test_times_past_the_window_no_longer_count(backend: str) -> None:
    window, now = _window(limit=1, seconds=10), time.time()
    ratelimit.count([window], now)

    assert not ratelimit.count([window], now + 9.9)[0].admits(window)
    assert ratelimit.count([window], now + 10.5)[0].count == 0


def test_a_full_gate_refuses_before_anything_is_counted(backend: str) -> None:
    gate, counted, now = _window(limit=1), _window(limit=5), time.time()
    ratelimit.count([Window(gate.key, None, gate.seconds)], now)  # one failure recorded

    with pytest.raises(GateRefused) as refused:
        ratelimit.count([counted], now + 1, gate=gate)

    assert refused.value.seen.count == 1
    assert ratelimit.count([counted], now + 2)[0].count == 0
    # A gate is only read: a request it admits is not added to it.
    open_gate = _window(limit=5)
    ratelimit.count([counted], now + 3, gate=open_gate)
    assert ratelimit.count([open_gate], now + 4)[0].count == 0


def test_a_log_without_a_limit_records_every_request(backend: str) -> None:
    window, now = _window(limit=None), time.time()
    for n in range(5):
        assert ratelimit.count([window], now + n)[0].admits(window)
    assert ratelimit.count([window], now + 5)[0].count == 5


@pytest.mark.parametrize(("count", "oldest_age"), [(3, 10.0), (3, 59.0), (5, 30.0)])
def test_the_wait_is_drfs(count: int, oldest_age: float) -> None:
    window, now = Window("k", 3, 60), 1_000_000.0
    throttle: Any = SimpleRateThrottle.__new__(SimpleRateThrottle)
    throttle.num_requests, throttle.duration, throttle.now = 3, 60, now
    throttle.history = [now - 1.0] * (count - 1) + [now - oldest_age]

    seen = ratelimit.Seen(count, now - oldest_age)

    assert seen.wait(window, now) == throttle.wait()


def test_concurrent_requests_are_each_counted_once() -> None:
    """Two requests reading the same log at once both counted it as DRF's cache lists do not:
    in Redis the trim, count and add are one script."""
    window, now = _window(limit=10), time.time()
    admitted: list[bool] = []
    start = threading.Barrier(30)

    def request(n: int) -> None:
        start.wait()
        admitted.append(ratelimit.count([window], now + n / 1000)[0].admits(window))

    threads = [threading.Thread(target=request, args=(n,)) for n in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert admitted.count(True) == 10
    assert ratelimit.count([window], now + 1)[0].count == 10


def test_each_log_expires_after_its_own_window() -> None:
    short, long, now = _window(seconds=2), _window(seconds=600), time.time()
    ratelimit.count([short, long], now)
    default: Any = caches["default"]

    def ttl(window: Window) -> int:
        return int(default.redis_client().ttl(ratelimit.redis_key(default, window.key)))

    assert 0 < ttl(short) <= 2
    assert 2 < ttl(long) <= 600


def test_a_log_kept_drfs_way_by_an_earlier_release_is_not_in_the_way() -> None:
    """During a rolling deploy a process of the last release still writes DRF's pickled lists:
    the sorted sets live under keys of their own, so neither is read as the other."""
    window, now = _window(limit=2), time.time()
    caches["default"].set(window.key, [now - 1], 60)

    assert ratelimit.count([window], now)[0].count == 0
    assert caches["default"].get(window.key) == [now - 1]


def _slot(*bounds: Bound) -> Slot:
    return Slot(bounds, hold_seconds=60, what="uploads")


def test_a_slot_is_taken_with_the_counts_only_when_every_log_admits(backend: str) -> None:
    """The upload's slot (plumbing/concurrency.py) rides on the throttles' round trip: taken when
    the request is admitted, not tried when a log refuses it, refused when its bound is full."""
    tight, loose, now = _window(limit=1), _window(limit=5), time.time()
    bound = Bound(f"test:{uuid.uuid4().hex}", 1)

    first = _slot(bound)
    ratelimit.count([tight, loose], now, slot=first)
    assert first.full == 0  # taken

    refused = _slot(Bound(f"test:{uuid.uuid4().hex}", 1))
    ratelimit.count([tight, loose], now + 1, slot=refused)  # `tight` refuses
    assert refused.full is None  # not tried
    full = _slot(bound)
    ratelimit.count([loose], now + 2, slot=full)
    assert full.full == 1  # the first still holds the bound's one slot
    with pytest.raises(TooManyConcurrent), full.held():
        pass

    first.give_back()
    again = _slot(bound)
    ratelimit.count([loose], now + 3, slot=again)
    assert again.full == 0
    again.give_back()


def test_a_gate_that_refuses_takes_no_slot(backend: str) -> None:
    gate, counted, now = _window(limit=1), _window(), time.time()
    ratelimit.count([Window(gate.key, None, gate.seconds)], now)  # one failure recorded
    bound = Bound(f"test:{uuid.uuid4().hex}", 1)
    slot = _slot(bound)
    with pytest.raises(GateRefused):
        ratelimit.count([counted], now + 1, gate=gate, slot=slot)
    assert slot.full is None
    with client_slots([bound], hold_seconds=60, what="x"):  # the bound's slot is still free
        pass
