from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.db import transaction

from accounts.models import ApiToken, Membership, Organization

TOKEN_PREFIX = "rc_"  # noqa: S105  (a public prefix that marks our keys, not a secret)


def hash_token(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def create_organization(*, name: str, owner: User) -> Organization:
    organization = Organization.objects.create(name=name)
    Membership.objects.create(organization=organization, user=owner, role=Membership.Role.OWNER)
    return organization


def create_personal_organization(*, user: User) -> Organization:
    """Someone signed in with no organisation yet diagnoses in one of their own."""
    return create_organization(name=f"{user.get_username()}'s organisation", owner=user)


def add_member(
    *, organization: Organization, user: User, role: str = Membership.Role.MEMBER
) -> Membership:
    return Membership.objects.create(organization=organization, user=user, role=role)


def create_api_token(
    *, organization: Organization, created_by: User | None, name: str
) -> tuple[ApiToken, str]:
    """Returns the token row and the key; the key is shown once and never stored."""
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        organization=organization,
        created_by=created_by,
        name=name,
        prefix=key[:10],
        digest=hash_token(key),
    )
    return token, key
