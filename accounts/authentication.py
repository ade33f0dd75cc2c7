"""`Authorization: Bearer rc_live_…` (or `Token rc_live_…`) for CI, scoped to one organisation.

DRF's `request.auth` is the `ApiToken`; `accounts.actors.actor_of` turns it into the actor.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts import selectors, services
from accounts.models import ApiToken
from accounts.throttles import (
    CHECKED_WITH_THROTTLES,
    record_failure,
    refuse_if_too_many_failures,
)

# A view may set on the request, before it authenticates, the function that finds the live token
# of a secret (selectors.token_for_secret, or None, by default): a submission reads its
# organisation's facts in the same statement (diagnosis/api.py).
TOKEN_LOOKUP = "_rootcause_token_lookup"  # noqa: S105 - an attribute name, no secret


class TokenUser(AnonymousUser):
    """The caller behind an API token: authenticated, but not a person with a session."""

    def __init__(self, token: ApiToken) -> None:
        self.token = token
        self.organization = token.organization

    @property
    def is_authenticated(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_anonymous(self) -> bool:  # type: ignore[override]
        return False


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = (b"bearer", b"token")

    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in self.keywords:
            return None  # no token: the session (or nobody) is the caller
        later = getattr(request, CHECKED_WITH_THROTTLES, False)
        if not later:
            refuse_if_too_many_failures(request)
        if len(header) != 2:
            if later:
                refuse_if_too_many_failures(request)
            record_failure(request)
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        lookup = getattr(request, TOKEN_LOOKUP, None) or selectors.token_for_secret
        token = lookup(header[1].decode("latin-1"))
        if token is None:
            if later:
                refuse_if_too_many_failures(request)
            record_failure(request)
            # One answer for malformed, unknown, revoked and expired: no oracle for guessing.
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API token.")
        services.record_token_use(token=token)
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
