from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from accounts.models import Membership, Organization


def organization_for_user(user: User | AnonymousUser) -> Organization | None:
    """The organisation a signed-in person acts for: their earliest membership."""
    if not user.is_authenticated:
        return None
    membership = (
        Membership.objects.filter(user=user).select_related("organization").order_by("id").first()
    )
    return membership.organization if membership else None
