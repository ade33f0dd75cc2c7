"""A person's own account: changing its e-mail address (re-verified by a link to the new one),
deleting it, and deleting an organisation with everything it holds.

Kept apart from `services.py`: these are the account's end of life and identity, not the
organisation's everyday administration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import ForeignObjectRel
from django.urls import reverse

from accounts import selectors
from accounts.actors import Actor
from accounts.models import Membership, Organization
from accounts.selectors import Forbidden, InvalidLink
from accounts.services import _send_email, mark_email_verified, normalize_email
from plumbing.links import absolute_url
from plumbing.problems import ApplicationError, Conflict

logger = logging.getLogger(__name__)

CHANGE_EMAIL_SALT = "accounts.change-email"


class WrongPassword(ApplicationError):
    title = "Wrong password"


def _check_password(user: User, password: str) -> None:
    if not user.check_password(password):
        raise WrongPassword("That is not your current password.")


# --- Changing the e-mail address -------------------------------------------------------------


def request_email_change(*, user: User, new_email: str, password: str) -> str:
    """Send a link to the new address; nothing changes until it is followed. The old address is
    told, so that a change made by someone else with the session is noticed. Returns the new
    address as stored (lower-case)."""
    _check_password(user, password)
    email = normalize_email(new_email)
    if email == user.email.lower():
        raise ApplicationError(f"{email} is already your address.")
    if selectors.user_for_email(email) is not None:
        raise Conflict("Another account uses this e-mail address.")
    token = signing.dumps(
        {"user": user.pk, "from": user.email.lower(), "to": email}, salt=CHANGE_EMAIL_SALT
    )
    hours = settings.EMAIL_VERIFICATION_MAX_AGE // 3600
    _send_email(
        to=email,
        template="change_email",
        context={
            "link": absolute_url(reverse("accounts:confirm-email-change", args=[token])),
            "hours": hours,
            "old": user.email,
        },
    )
    _send_email(to=user.email, template="email_change_notice", context={"new": email})
    return email


def confirm_email_change(*, token: str) -> User:
    """Follow the link: the new address becomes the account's (its sign-in name too), verified."""
    payload: dict[str, object] = selectors.read_signed_link(
        token,
        dict,
        salt=CHANGE_EMAIL_SALT,
        max_age=settings.EMAIL_VERIFICATION_MAX_AGE,
        what="This link",
        again="ask for the change again",
    )
    user = selectors.active_user_of(payload)
    if user is None or user.email.lower() != payload.get("from"):
        raise InvalidLink("This link was for an address the account no longer has.")
    email = str(payload["to"])
    if selectors.user_for_email(email) not in (None, user):
        raise Conflict("Another account took this e-mail address meanwhile.")
    try:
        with transaction.atomic():
            user.email = user.username = email
            user.save(update_fields=["email", "username"])
            mark_email_verified(user=user, email=email)
    except IntegrityError:
        raise Conflict("Another account took this e-mail address meanwhile.") from None
    return user


# --- What deleting an organisation deletes ---------------------------------------------------


@dataclass(frozen=True)
class Holding:
    """Rows of one kind that go with an organisation."""

    what: str
    count: int


def holdings_of(organization: Organization) -> list[Holding]:
    """Everything that points at the organisation and goes with it, counted by kind, read from
    the models' relations (so a new app's table is listed without this module knowing it).
    Rows of those rows (results, deliveries, follow-up questions, verdicts) go with them."""
    found: list[Holding] = []
    for relation in Organization._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ForeignObjectRel) or relation.related_model is None:
            continue
        model = relation.related_model
        if isinstance(model, str):
            continue
        count = model._default_manager.filter(**{relation.field.name: organization}).count()
        if count:
            found.append(Holding(str(model._meta.verbose_name_plural), count))
    return sorted(found, key=lambda h: h.what)


# --- Deleting ---------------------------------------------------------------------------------


def delete_organization(*, actor: Actor, confirm_name: str) -> str:
    """The owner deletes the organisation and all it holds; its members' accounts stay. Returns
    its name."""
    organization = selectors.require_role(actor, Membership.Role.OWNER)
    if confirm_name.strip() != organization.name:
        raise ApplicationError("Type the organisation's name exactly to confirm.")
    name = organization.name
    with transaction.atomic():
        organization.delete()
    logger.info("organisation %s deleted by its owner", organization.pk)
    return name


@dataclass(frozen=True)
class AccountEnd:
    """What deleting a person's account takes with it, and what stops it."""

    deleted_organizations: list[Organization]  # theirs alone: deleted with all they hold
    blocking: list[Organization]  # sole owner with other members: transfer ownership first
    left: list[Organization]  # they leave; the organisation and its history stay


def account_end(user: User) -> AccountEnd:
    deleted, blocking, left = [], [], []
    for membership in selectors.memberships_of(user).select_related("organization"):
        organization = membership.organization
        others = Membership.objects.filter(organization=organization).exclude(user=user)
        if not others.exists():
            deleted.append(organization)
        elif (
            membership.role == Membership.Role.OWNER
            and not others.filter(role=Membership.Role.OWNER).exists()
        ):
            blocking.append(organization)
        else:
            left.append(organization)
    return AccountEnd(deleted, blocking, left)


def delete_account(*, user: User, password: str) -> AccountEnd:
    """The person's account, and every organisation of which they are the only member with all
    it holds; refused while they are the only owner of an organisation with other members."""
    _check_password(user, password)
    end = account_end(user)
    if end.blocking:
        names = ", ".join(o.name for o in end.blocking)
        raise Forbidden(
            f"You are the only owner of {names}: make another member owner, or delete the "
            "organisation, first."
        )
    with transaction.atomic():
        for organization in end.deleted_organizations:
            organization.delete()
        user.delete()
    logger.info("an account was deleted with %d organisations", len(end.deleted_organizations))
    return end
