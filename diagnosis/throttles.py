"""Burst limits on submissions, on top of the daily quota (billing_tiers): DRF throttles.

Each answers 429 problem+json (`throttled`) with Retry-After through config.problems. The rates
are read from settings when a request is throttled (not frozen at import as DRF's are), so a
deployment sets them in the environment and a test overrides them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.actors import actor_of, client_address


class _SettingsRateThrottle(SimpleRateThrottle):
    setting = ""

    def __init__(self) -> None:  # DRF reads the rate here; ours is read from settings
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)

    def get_rate(self) -> str | None:
        rate: str | None = getattr(settings, self.setting)
        return rate


class SubmissionsPerAddress(_SettingsRateThrottle):
    """Submissions from one client address per minute, whoever sends them."""

    scope = "submissions-address"
    setting = "THROTTLE_SUBMISSIONS_PER_ADDRESS"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class SubmissionsPerOrganization(_SettingsRateThrottle):
    """Submissions for one organisation per minute, from all its tokens and people."""

    scope = "submissions-organization"
    setting = "THROTTLE_SUBMISSIONS_PER_ORGANIZATION"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        organization = actor_of(request).organization
        if organization is None:
            return None  # a visitor: the per-address limit and the anonymous quota apply
        return self.cache_format % {"scope": self.scope, "ident": organization.pk}


class GateRefused(Exception):
    """The `gate` of `throttle_waits` refused: nothing was counted."""

    def __init__(self, wait: float | None) -> None:
        super().__init__(wait)
        self.wait = wait


def throttle_waits(
    throttles: Sequence[SimpleRateThrottle],
    request: Request,
    view: Any,
    *,
    gate: SimpleRateThrottle | None = None,
) -> list[float | None]:
    """DRF's `check_throttles` for several cache-counted throttles, in two cache round trips.

    Each throttle counts and decides as its own `allow_request` would (a refused one records
    nothing, an admitted one records the request even if another refuses it); their histories
    are read in one `get_many` and the admitted ones written back in one `set_many`, instead of
    a get and a set per throttle. Returns the waits of those that refuse. The write keeps every
    history for the longest of their windows: a history is cut to its own window each time it is
    read, so a key that outlives its window only holds times that no longer count.

    The `gate`'s history is read in the same `get_many` but never written (failed token
    authentications: only failures count, elsewhere); past its rate it raises GateRefused before
    anything is counted, as if it had been checked first on its own.
    """
    counted: list[tuple[SimpleRateThrottle, str]] = []
    for throttle in [gate, *throttles] if gate is not None else throttles:
        if throttle.rate is None:
            continue
        key = throttle.get_cache_key(request, view)
        if key is not None:
            counted.append((throttle, key))
    if not counted:
        return []
    cache = counted[0][0].cache
    histories = cache.get_many([key for _, key in counted])
    waits: list[float | None] = []
    admitted: dict[str, list[float]] = {}
    keep_for = 0
    for throttle, key in counted:
        # Set from the rate by the throttle's constructor (not in DRF's stubs).
        num_requests: int = throttle.num_requests  # type: ignore[attr-defined]
        duration: int = throttle.duration  # type: ignore[attr-defined]
        throttle.key = key
        throttle.now = throttle.timer()
        throttle.history = [t for t in histories.get(key, []) if t > throttle.now - duration]
        refused = len(throttle.history) >= num_requests
        if throttle is gate:
            if refused:
                raise GateRefused(throttle.wait())
            continue
        if refused:
            waits.append(throttle.wait())
            continue
        throttle.history.insert(0, throttle.now)
        admitted[key] = throttle.history
        keep_for = max(keep_for, duration)
    if admitted:
        cache.set_many(admitted, keep_for)
    return waits
