"""Failed API-token authentication, limited per client address (a DRF rate, from settings).

Only failures count: a CI fleet behind one address with valid tokens is never held back, while
someone trying tokens gets 429 problem+json with Retry-After past THROTTLE_FAILED_TOKENS_PER_ADDRESS
— before the lookup, so a right guess during the wait is refused too.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.actors import client_address


class _FailedTokens(SimpleRateThrottle):
    scope = "failed-token-auth"

    def __init__(self, request: Request) -> None:
        self.rate = settings.THROTTLE_FAILED_TOKENS_PER_ADDRESS
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.cache_format % {"scope": self.scope, "ident": client_address(request)}
        self.now = self.timer()
        window = self.duration or 0
        self.history = [t for t in self.cache.get(self.key, []) if t > self.now - window]


def refuse_if_too_many_failures(request: Request) -> None:
    throttle = _FailedTokens(request)
    if throttle.num_requests is not None and len(throttle.history) >= throttle.num_requests:
        raise exceptions.Throttled(wait=throttle.wait())


def record_failure(request: Request) -> None:
    throttle = _FailedTokens(request)
    throttle.history.insert(0, throttle.now)
    throttle.cache.set(throttle.key, throttle.history, throttle.duration)
