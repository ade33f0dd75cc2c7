"""Writes of accounts: sign-up, e-mail verification, organisations, members, invitations,
domains, API tokens and masking rules. Services that act for someone take the `Actor` and
check its role."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import Http404
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts import selectors, tokens
from accounts.actors import ALL_SCOPES, Actor
from accounts.domains import InvalidDomain, is_public_email_domain, normalize_domain
from accounts.models import (
    ApiToken,
    Domain,
    Invitation,
    MaskingRule,
    Membership,
    Organization,
    VerifiedEmail,
)
from accounts.selectors import Forbidden, InvalidLink
from plumbing.links import absolute_url
from plumbing.problems import ApplicationError, Conflict
from plumbing.text import one_line
from rootcause.masking import rules as masking_rules

logger = logging.getLogger(__name__)

# A token's last use is written at most this often: a CI loop must not turn every call into a
# write on one hot row.
LAST_USE_PRECISION = timedelta(minutes=1)
# How often a person may ask for another verification e-mail.
RESEND_VERIFICATION_EVERY = 60


class TooManyRequests(ApplicationError):
    status_code = 429
    title = "Too many requests"


class InvalidMaskingRule(ApplicationError):
    """A term or pattern refused by `rootcause.masking.rules`; the detail names the problem."""

    title = "Invalid masking rule"


def normalize_email(raw: str) -> str:
    """Addresses are compared and stored lower-case: one person, one account, whatever the case."""
    email = raw.strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ApplicationError(f"{raw!r} is not an e-mail address.") from None
    return email


# --- E-mail -----------------------------------------------------------------------------------


def _send_email(*, to: str, template: str, context: dict[str, object]) -> None:
    """Render `accounts/email/<template>` and send it once the transaction commits.

    The body carries a secret link: it is handed to the mail backend only, never logged.
    """
    subject = " ".join(render_to_string(f"accounts/email/{template}_subject.txt", context).split())
    body = render_to_string(f"accounts/email/{template}.txt", context)

    def send() -> None:
        try:
            send_mail(subject, body, None, [to])
        except Exception:  # the row is committed; a mail outage must not turn it into a 500
            logger.exception("Could not send the %s e-mail", template)

    transaction.on_commit(send)


# --- Sign-up and e-mail verification ----------------------------------------------------------


@transaction.atomic
def sign_up(*, email: str, password: str) -> User:
    """A new person with their own organisation; the link to verify their address is sent.

    The e-mail is the username (lower-cased), so the unique username makes two sign-ups with
    one address in any case impossible, even at the same moment. The password has been through
    Django's validators (the form runs them with the e-mail, for the similarity check).
    """
    email = normalize_email(email)
    if selectors.user_for_email(email) is not None:
        raise Conflict("An account with this e-mail address already exists.")
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=email, email=email, password=password)
    except IntegrityError:
        raise Conflict("An account with this e-mail address already exists.") from None
    create_personal_organization(user=user)
    send_verification_email(user=user)
    return user


def send_verification_email(*, user: User) -> None:
    token = signing.dumps(
        {"user": user.pk, "email": user.email.lower()}, salt=selectors.VERIFY_EMAIL_SALT
    )
    _send_email(
        to=user.email,
        template="verify_email",
        context={
            "link": absolute_url(reverse("accounts:verify-email", args=[token])),
            "hours": settings.EMAIL_VERIFICATION_MAX_AGE // 3600,
        },
    )


def resend_verification_email(*, user: User) -> None:
    if selectors.has_verified_email(user):
        raise ApplicationError("Your e-mail address is already verified.")
    if not cache.add(f"accounts:verify-sent:{user.pk}", 1, RESEND_VERIFICATION_EVERY):
        raise TooManyRequests("A verification e-mail was sent a moment ago; check your inbox.")
    send_verification_email(user=user)


def verify_email(*, token: str) -> User:
    user, email = selectors.user_from_verification_token(token)
    mark_email_verified(user=user, email=email)
    return user


def mark_email_verified(*, user: User, email: str | None = None) -> None:
    """Record that the person reads `email` (their current address unless given)."""
    address = (email or user.email).lower()
    if address:
        VerifiedEmail.objects.get_or_create(user=user, email=address)


# --- Organisations and members ----------------------------------------------------------------


@transaction.atomic
def create_organization(*, name: str, owner: User) -> Organization:
    # Shown to its members and in invitations: no controls, no direction-changing characters.
    organization = Organization.objects.create(name=one_line(name))
    Membership.objects.create(organization=organization, user=owner, role=Membership.Role.OWNER)
    return organization


def create_personal_organization(*, user: User) -> Organization:
    """Every person has one: made at sign-up (or at the first diagnosis of an older account)."""
    return create_organization(name=f"{user.get_username()}'s organisation", owner=user)


def add_member(
    *, organization: Organization, user: User, role: str = Membership.Role.MEMBER
) -> Membership:
    return Membership.objects.create(organization=organization, user=user, role=role)


def rename_organization(*, actor: Actor, name: str) -> Organization:
    organization = selectors.require_manager(actor)
    name = one_line(name)
    if not 1 <= len(name) <= 200:
        raise ApplicationError("The name must have 1 to 200 characters.")
    organization.name = name
    organization.save(update_fields=["name"])
    return organization


def _lock(organization: Organization, actor: Actor) -> str | None:
    """Lock the organisation for a change of owners; the actor's role as it is now.

    Owner changes are serialised per organisation, so two owners leaving at once cannot leave
    it with none; the role is read again under the lock, since the request's may be stale.
    """
    Organization.objects.select_for_update().get(pk=organization.pk)
    return (
        Membership.objects.filter(organization=organization, user=actor.user)
        .values_list("role", flat=True)
        .first()
    )


def _ensure_not_last_owner(membership: Membership, new_role: str | None) -> None:
    if membership.role != Membership.Role.OWNER or new_role == Membership.Role.OWNER:
        return
    if selectors.owner_count(membership.organization) <= 1:
        raise Conflict(
            "An organisation needs an owner: make someone else owner first (transfer ownership)."
        )


@transaction.atomic
def remove_member(*, actor: Actor, membership: Membership) -> None:
    """Owners remove anyone; anyone may leave; the last owner can do neither.

    The tokens the person created for this organisation are revoked with them: they held the
    secrets, and they no longer belong here.
    """
    if actor.token is not None:
        raise Forbidden("API tokens cannot manage the organisation's members.")
    organization = selectors.require_organization(actor)
    if membership.organization_id != organization.pk:
        raise Http404("No such member.")
    role = _lock(organization, actor)
    leaving = actor.user is not None and membership.user_id == actor.user.pk
    if not leaving and role != Membership.Role.OWNER:
        raise Forbidden("Only an owner of the organisation can remove members.")
    membership.refresh_from_db()
    _ensure_not_last_owner(membership, None)
    membership.delete()
    revoke_api_tokens(
        tokens=ApiToken.objects.filter(organization=organization, created_by_id=membership.user_id)
    )


def leave_organization(*, actor: Actor) -> None:
    organization = selectors.require_organization(actor)
    membership = Membership.objects.get(organization=organization, user=actor.user)
    remove_member(actor=actor, membership=membership)


@transaction.atomic
def change_role(*, actor: Actor, membership: Membership, role: str) -> Membership:
    organization = selectors.require_role(actor, Membership.Role.OWNER)
    if role not in Membership.Role.values:
        raise ApplicationError(f"{role!r} is not a role: owner, admin or member.")
    if membership.organization_id != organization.pk:
        raise Http404("No such member.")
    if _lock(organization, actor) != Membership.Role.OWNER:
        raise Forbidden("Only an owner of the organisation can change roles.")
    membership.refresh_from_db()
    _ensure_not_last_owner(membership, role)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def transfer_ownership(*, actor: Actor, membership: Membership) -> Membership:
    """The member becomes an owner and the acting owner an admin, in one step."""
    organization = selectors.require_role(actor, Membership.Role.OWNER)
    if membership.organization_id != organization.pk:
        raise Http404("No such member.")
    if _lock(organization, actor) != Membership.Role.OWNER:
        raise Forbidden("Only an owner of the organisation can transfer ownership.")
    if actor.user is not None and membership.user_id == actor.user.pk:
        raise ApplicationError("You already own this organisation; choose another member.")
    membership.refresh_from_db()
    membership.role = Membership.Role.OWNER
    membership.save(update_fields=["role"])
    Membership.objects.filter(organization=organization, user=actor.user).update(
        role=Membership.Role.ADMIN
    )
    return membership


# --- Invitations ------------------------------------------------------------------------------


def invitation_link(invitation: Invitation) -> str:
    """The link in the e-mail: the id, signed. In the query string, which request logs omit."""
    token = signing.dumps(str(invitation.id), salt=selectors.INVITATION_SALT)
    return absolute_url(f"{reverse('accounts:accept-invitation')}?{urlencode({'token': token})}")


@transaction.atomic
def invite_member(*, actor: Actor, email: str, role: str = Membership.Role.MEMBER) -> Invitation:
    """Invite a person by e-mail; a pending invitation to the same address is sent again."""
    organization = selectors.require_manager(actor)
    email = normalize_email(email)
    if role not in (Membership.Role.ADMIN, Membership.Role.MEMBER):
        raise ApplicationError("Invite as admin or member; make someone owner once they join.")
    already = Membership.objects.filter(organization=organization).filter(user__email__iexact=email)
    if already.exists():
        raise Conflict(f"{email} is already a member of {organization.name}.")
    expires_at = timezone.now() + timedelta(seconds=settings.INVITATION_MAX_AGE)
    invitation = (
        Invitation.objects.select_for_update()
        .filter(organization=organization, email=email, status=Invitation.Status.PENDING)
        .first()
    )
    try:
        with transaction.atomic():
            if invitation is None:
                invitation = Invitation.objects.create(
                    organization=organization,
                    email=email,
                    role=role,
                    invited_by=actor.user,
                    expires_at=expires_at,
                )
            else:
                invitation.role, invitation.invited_by = role, actor.user
                invitation.expires_at = expires_at
                invitation.save(update_fields=["role", "invited_by", "expires_at"])
    except IntegrityError:  # the same address invited at the same moment by someone else
        raise Conflict(f"{email} has just been invited.") from None
    _send_email(
        to=email,
        template="invitation",
        context={
            "organization": organization,
            "invited_by": actor.user.email if actor.user else "",
            "role": invitation.role,
            "link": invitation_link(invitation),
            "days": settings.INVITATION_MAX_AGE // 86400,
        },
    )
    return invitation


def revoke_invitation(*, actor: Actor, invitation: Invitation) -> None:
    organization = selectors.require_manager(actor)
    if invitation.organization_id != organization.pk:
        raise Http404("No such invitation.")
    Invitation.objects.filter(pk=invitation.pk, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.REVOKED
    )


@transaction.atomic
def accept_invitation(*, user: User, token: str) -> Membership:
    """Join the organisation of a genuine, unexpired, unused invitation sent to this person.

    Following the link proves the person reads the invited address, so it is verified too.
    """
    invitation = selectors.invitation_from_token(token)
    if user.email.lower() != invitation.email:
        raise ApplicationError(
            f"This invitation was sent to {invitation.email}; sign in with that address "
            "to accept it."
        )
    now = timezone.now()
    # Compare-and-set: of two acceptances of one link at the same moment, one wins.
    accepted = Invitation.objects.filter(
        pk=invitation.pk, status=Invitation.Status.PENDING, expires_at__gt=now
    ).update(status=Invitation.Status.ACCEPTED, accepted_at=now, accepted_by=user)
    if not accepted:
        raise InvalidLink("This invitation has already been used.")
    membership, _ = Membership.objects.get_or_create(
        organization=invitation.organization, user=user, defaults={"role": invitation.role}
    )
    mark_email_verified(user=user, email=invitation.email)
    return membership


# --- Domains ----------------------------------------------------------------------------------


def claim_domain(*, actor: Actor, domain: str) -> Domain:
    organization = selectors.require_manager(actor)
    try:
        name = normalize_domain(domain)
    except InvalidDomain as exc:
        raise ApplicationError(str(exc)) from None
    if is_public_email_domain(name):
        raise ApplicationError(
            f"{name} is a public mail provider: anyone can have an address there, so it "
            "cannot identify a workplace."
        )
    try:
        with transaction.atomic():
            return Domain.objects.create(
                organization=organization, domain=name, created_by=actor.user
            )
    except IntegrityError:
        raise Conflict(f"{organization.name} has already claimed {name}.") from None


def remove_domain(*, actor: Actor, domain: Domain) -> None:
    organization = selectors.require_manager(actor)
    if domain.organization_id != organization.pk:
        raise Http404("No such domain.")
    domain.delete()


# --- API tokens -------------------------------------------------------------------------------


def create_api_token(
    *,
    organization: Organization,
    created_by: User | None,
    name: str,
    scopes: Iterable[str] = ALL_SCOPES,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """The token row and its secret; the secret is shown once and only its digest is stored."""
    name = one_line(name)
    if not 1 <= len(name) <= 100:
        raise ApplicationError("The token name must have 1 to 100 characters.")
    chosen = sorted(set(scopes))
    if not chosen:
        raise ApplicationError("Choose at least one scope.")
    unknown = set(chosen) - ALL_SCOPES
    if unknown:
        raise ApplicationError(
            f"Unknown scope {sorted(unknown)[0]!r}; scopes are {', '.join(sorted(ALL_SCOPES))}."
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise ApplicationError("The expiry must be in the future.")
    secret = tokens.generate_secret()
    token = ApiToken.objects.create(
        organization=organization,
        created_by=created_by,
        name=name,
        scopes=chosen,
        expires_at=expires_at,
        prefix=secret[: tokens.SHOWN_LENGTH],
        digest=tokens.hash_secret(secret),
    )
    return token, secret


def issue_api_token(
    *, actor: Actor, name: str, scopes: Iterable[str], expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """An owner or admin creates a token for their organisation (the page and the API)."""
    organization = selectors.require_manager(actor)
    return create_api_token(
        organization=organization,
        created_by=actor.user,
        name=name,
        scopes=scopes,
        expires_at=expires_at,
    )


def revoke_api_token(*, actor: Actor, token: ApiToken) -> None:
    organization = selectors.require_manager(actor)
    if token.organization_id != organization.pk:
        raise Http404("No such token.")
    revoke_api_tokens(tokens=ApiToken.objects.filter(pk=token.pk))


def revoke_api_tokens(*, tokens: QuerySet[ApiToken]) -> int:
    """Revoke the live ones among `tokens` (the admin's action too); how many were."""
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def record_token_use(*, token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USE_PRECISION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


# --- Masking rules ----------------------------------------------------------------------------


def check_masking_rule(
    *, organization: Organization, kind: str, value: str, label: str = ""
) -> masking_rules.Rule:
    """The rule as it would be stored, or `InvalidMaskingRule`/`Conflict` saying why not.

    One check for the API, the settings page and the admin: the library's validation (length,
    compiles in Hyperscan, no empty match), the organisation's count limit, no duplicate, and
    the whole set still compiling together.
    """
    try:
        rule = masking_rules.validate_rule(
            kind, value, label, max_length=settings.MASKING_RULE_MAX_LENGTH
        )
    except masking_rules.RuleError as exc:
        raise InvalidMaskingRule(str(exc)) from None
    existing = MaskingRule.objects.filter(organization=organization)
    lookup = "value__iexact" if rule.kind == masking_rules.TERM else "value"
    if existing.filter(kind=rule.kind, **{lookup: rule.value}).exists():
        raise Conflict(f"The {rule.kind} {rule.value!r} is already a masking rule.")
    limit = settings.MASKING_RULES_PER_ORGANIZATION
    if existing.count() >= limit:
        raise InvalidMaskingRule(
            f"{organization.name} has {limit} masking rules, the most allowed: delete one first."
        )
    try:
        masking_rules.validate_rules([*selectors.masking_rules_of(organization.pk), rule])
    except masking_rules.RuleError as exc:
        raise InvalidMaskingRule(str(exc)) from None
    return rule


@transaction.atomic
def create_masking_rule(
    *, organization: Organization, created_by: User | None, kind: str, value: str, label: str = ""
) -> MaskingRule:
    # The organisation row is locked so that two additions at once cannot pass the limit.
    Organization.objects.select_for_update().get(pk=organization.pk)
    rule = check_masking_rule(organization=organization, kind=kind, value=value, label=label)
    return MaskingRule.objects.create(
        organization=organization,
        created_by=created_by,
        kind=rule.kind,
        value=rule.value,
        label=rule.label,
    )


def add_masking_rule(*, actor: Actor, kind: str, value: str, label: str = "") -> MaskingRule:
    """An owner or admin adds a rule; the organisation's next diagnoses are masked with it."""
    organization = selectors.require_manager(actor)
    return create_masking_rule(
        organization=organization, created_by=actor.user, kind=kind, value=value, label=label
    )


def delete_masking_rule(*, actor: Actor, rule: MaskingRule) -> None:
    organization = selectors.require_manager(actor)
    if rule.organization_id != organization.pk:
        raise Http404("No such masking rule.")
    rule.delete()
