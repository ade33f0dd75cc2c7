"""Failed API-token authentication, limited per client address (a DRF rate, from settings).

Only failures count: a CI fleet behind one address with valid tokens is never held back, while
someone trying tokens gets 429 problem+json with Retry-After past THROTTLE_FAILED_TOKENS_PER_ADDRESS
— before the lookup (or, on a view that reads it with its own throttles, right after the lookup
and before anything else), so a right guess during the wait is refused too.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.actors import client_address
from plumbing import ratelimit
from plumbing.ratelimit import Window


class FailedTokens(SimpleRateThrottle):
    """The failures from the request's address in the window (a log of plumbing/ratelimit.py,
    read with a submission's burst limits by diagnosis/throttles.py); a request is counted by
    `record_failure`, and only when its token is refused."""

    scope = "failed-token-auth"

    def __init__(self) -> None:
        self.rate = settings.THROTTLE_FAILED_TOKENS_PER_ADDRESS
        self.num_requests, self.duration = self.parse_rate(self.rate)

    def get_cache_key(self, request: Request, view: object = None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}

    def window(self, request: Request) -> Window:
        return Window(self.get_cache_key(request), self.num_requests, self.duration or 0)


def refuse_if_too_many_failures(request: Request) -> None:
    throttle = FailedTokens()
    try:
        ratelimit.count([], throttle.timer(), gate=throttle.window(request))
    except ratelimit.GateRefused as refused:
        raise exceptions.Throttled(wait=refused.wait) from None


def record_failure(request: Request) -> None:
    throttle = FailedTokens()
    window = throttle.window(request)
    # Every failure is recorded, past the limit too: the log admits all.
    ratelimit.count([Window(window.key, None, window.seconds)], throttle.timer())


# A view that checks the failures together with its own throttles, in one cache round trip,
# sets this on the request before authentication: a valid token is then refused during the wait
# by the view's check (before anything else is done), a wrong one still here, before it counts.
CHECKED_WITH_THROTTLES = "failed_tokens_checked_with_throttles"
