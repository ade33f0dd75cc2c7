"""`Authorization: Bearer rc_…` (or `Token rc_…`) for CI pipelines, scoped to one organisation."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiToken
from accounts.services import TOKEN_PREFIX, hash_token


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
    keywords = ("Bearer", "Token")

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if len(header) != 2 or header[0] not in self.keywords:
            return None
        key = header[1]
        if not key.startswith(TOKEN_PREFIX):
            raise exceptions.AuthenticationFailed("Malformed API token.")
        token = (
            ApiToken.objects.select_related("organization")
            .filter(digest=hash_token(key), revoked_at__isnull=True)
            .first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
