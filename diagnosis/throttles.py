"""Burst limits on submissions, on top of the daily quota (billing_tiers): DRF throttles.

Each answers 429 problem+json (`throttled`) with Retry-After through plumbing.problems. The rates
are read from settings when a request is throttled (not frozen at import as DRF's are), so a
deployment sets them in the environment and a test overrides them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from accounts.actors import actor_of, client_address
from accounts.models import ApiToken
from plumbing import ratelimit
from plumbing.concurrency import Bound, Slot
from plumbing.ratelimit import Window


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

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class SubmissionsPerOrganization(_SettingsRateThrottle):
    """Submissions for one organisation per minute, from all its tokens and people."""

    scope = "submissions-organization"
    setting = "THROTTLE_SUBMISSIONS_PER_ORGANIZATION"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        organization = actor_of(request).organization
        if organization is None:
            return None  # a visitor: the per-address limit and the anonymous quota apply
        return self.cache_format % {"scope": self.scope, "ident": organization.pk}


def window_of(throttle: SimpleRateThrottle, request: Request, view: APIView) -> Window | None:
    """The log `throttle` keeps for `request` (plumbing/ratelimit.py); None if it has no rate or
    does not apply to the request (a visitor has no organisation)."""
    if throttle.rate is None:
        return None
    key = throttle.get_cache_key(request, view)
    if key is None:
        return None
    # Set from the rate by the throttle's constructor (not in DRF's stubs).
    limit: int = throttle.num_requests  # type: ignore[attr-defined]
    seconds: int = throttle.duration  # type: ignore[attr-defined]
    return Window(key, limit, seconds)


def throttle_waits(
    throttles: Sequence[SimpleRateThrottle],
    request: Request,
    view: APIView,
    *,
    gate: SimpleRateThrottle | None = None,
    slot: Slot | None = None,
) -> list[float | None]:
    """DRF's `check_throttles` for several sliding-window throttles, in one round trip to Redis
    (plumbing/ratelimit.py; two cache round trips without Redis).

    Each throttle counts and decides as its own `allow_request` would (a refused one records
    nothing, an admitted one records the request even if another refuses it). Returns the waits
    of those that refuse. The `gate`'s log (failed token authentications: only failures count,
    elsewhere) is read with them but never added to; past its rate it raises
    plumbing.ratelimit.GateRefused before anything is counted, as if it had been checked first on
    its own. A `slot` (plumbing/concurrency.py) is taken in the same round trip when every
    throttle admits the request (`slot.full` says how that went), and not tried otherwise.
    """
    clock = throttles[0] if throttles else gate
    now = clock.timer() if clock is not None else time.time()  # DRF's clock, as theirs
    counted = [
        (throttle, window)
        for throttle in throttles
        if (window := window_of(throttle, request, view)) is not None
    ]
    gate_window = window_of(gate, request, view) if gate is not None else None
    seen = ratelimit.count([window for _, window in counted], now, gate=gate_window, slot=slot)
    return [
        found.wait(window, now)
        for (_, window), found in zip(counted, seen, strict=True)
        if not found.admits(window)
    ]


def concurrency_bounds(request: Request, kind: str) -> list[Bound]:
    """How many requests of `kind` ("waits", "uploads") the caller may have running at once
    (plumbing/concurrency.py): per API token or signed-in person, and per address whoever sends
    them. The address' bound is the larger: several people may share one (an office's NAT)."""
    upper = kind.upper()
    bounds = [
        Bound(
            f"{kind}:address:{client_address(request)}",
            getattr(settings, f"CONCURRENT_{upper}_PER_ADDRESS"),
        )
    ]
    auth = request.auth
    user = request.user
    if isinstance(auth, ApiToken):
        caller = f"token:{auth.pk}"
    elif user.is_authenticated:
        caller = f"user:{user.pk}"
    else:
        return bounds
    return [Bound(f"{kind}:{caller}", getattr(settings, f"CONCURRENT_{upper}_PER_TOKEN")), *bounds]


def upload_slot(request: Request) -> Slot:
    """A submission's slot of concurrent uploads per token and per address
    (plumbing/concurrency.py), not taken yet: held while its body is read."""
    return Slot(
        concurrency_bounds(request, "uploads"),
        hold_seconds=settings.UPLOAD_TIMEOUT_SECONDS + 60,
        what="uploads",
    )
