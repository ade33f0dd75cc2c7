"""The organisation switcher in the page header (config/templates/base.html)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from accounts import selectors
from accounts.actors import actor_of


def organizations(request: HttpRequest) -> dict[str, object]:
    """`current_organization` and `memberships`, read only if the page shows them."""
    user = getattr(request, "user", None)
    if not isinstance(user, User):
        return {}
    return {
        "current_organization": SimpleLazyObject(lambda: actor_of(request).organization),
        "memberships": SimpleLazyObject(lambda: list(selectors.memberships_of(user))),
    }
