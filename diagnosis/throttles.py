"""Burst limits on submissions, on top of the daily quota (billing_tiers): DRF throttles.

Each answers 429 problem+json (`throttled`) with Retry-After through config.problems. The rates
are read from settings when a request is throttled (not frozen at import as DRF's are), so a
deployment sets them in the environment and a test overrides them.
"""

from __future__ import annotations

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
