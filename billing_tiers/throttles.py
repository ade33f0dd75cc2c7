"""Throttles on redeeming evaluation codes: per person (or token) and per client address.

Counters live in Django's cache, which is Redis when REDIS_URL is set, so every web process sees
the same counts; the address is counted by its keyed hash, never written to the cache in clear.
"""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from accounts.actors import actor_of, anonymous_subject, client_address


class RedeemPerUserThrottle(SimpleRateThrottle):
    scope = "evaluation_redeem_user"

    def get_rate(self) -> str:
        return f"{settings.EVALUATION_REDEEM_PER_HOUR_USER}/hour"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        actor = actor_of(request)
        if actor.token is not None:
            ident = f"token-{actor.token.pk}"
        elif actor.user is not None:
            ident = f"user-{actor.user.pk}"
        else:
            return None  # visitors are refused before they try; the address throttle covers them
        return self.cache_format % {"scope": self.scope, "ident": ident}


class RedeemPerAddressThrottle(SimpleRateThrottle):
    scope = "evaluation_redeem_address"

    def get_rate(self) -> str:
        return f"{settings.EVALUATION_REDEEM_PER_HOUR_ADDRESS}/hour"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        ident = anonymous_subject(client_address(getattr(request, "_request", request)))
        return self.cache_format % {"scope": self.scope, "ident": ident}


REDEEM_THROTTLES = (RedeemPerUserThrottle, RedeemPerAddressThrottle)


def redeem_attempt_wait(page_request: HttpRequest) -> float | None:
    """For the page: counts an attempt and returns None, or the seconds to wait when refused."""
    # DRF's throttles read only what a page's HttpRequest shares with a Request (user, META)
    request = cast(Request, page_request)
    waits, view = [], APIView()
    for throttle_class in REDEEM_THROTTLES:
        throttle = throttle_class()
        if not throttle.allow_request(request, view):
            waits.append(throttle.wait() or 0.0)
    return max(waits) if waits else None
