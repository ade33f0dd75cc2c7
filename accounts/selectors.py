"""Reads and access checks of accounts: people, organisations, invitations, domains, tokens,
masking rules."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeVar, cast

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts import tokens
from accounts.actors import MANAGER_ROLES, Actor
from accounts.domains import domain_of, is_public_email_domain
from accounts.models import (
    ApiToken,
    Domain,
    Invitation,
    MaskingRule,
    Membership,
    Organization,
    VerifiedEmail,
)
from plumbing import sql
from plumbing.problems import ApplicationError
from rootcause.masking.rules import Rule

if TYPE_CHECKING:
    from plumbing.sql import SQLValue

VERIFY_EMAIL_SALT = "accounts.verify-email"
INVITATION_SALT = "accounts.invitation"


class Forbidden(ApplicationError, PermissionDenied):
    """403: problem+json from the API (an ApplicationError), Django's 403 page from a page."""

    status_code = 403
    title = "Forbidden"


class InvalidLink(ApplicationError):
    """A verification or invitation link that is malformed, tampered with, expired or used."""

    title = "Invalid link"


# --- People -----------------------------------------------------------------------------------


def has_verified_email(user: User | AnonymousUser | None) -> bool:
    """Whether the person proved they read their current address (a followed link)."""
    if user is None or not user.is_authenticated or not isinstance(user, User) or not user.email:
        return False
    return VerifiedEmail.objects.filter(user=user, email=user.email.lower()).exists()


def user_for_email(email: str) -> User | None:
    """The account whose e-mail (or e-mail-shaped username) this is, compared case-insensitively."""
    return (
        User.objects.filter(Q(username__iexact=email) | Q(email__iexact=email))
        .order_by("id")
        .first()
    )


_Payload = TypeVar("_Payload")


def read_signed_link(
    token: str, shape: type[_Payload], *, salt: str, max_age: int, what: str, again: str
) -> _Payload:
    """What a signed link carries, if it is genuine, unexpired and of the `shape` we sign; else
    InvalidLink naming `what` the link is ("This verification link") and how to get another."""
    try:
        payload = signing.loads(token, salt=salt, max_age=max_age)
    except signing.SignatureExpired:
        raise InvalidLink(f"{what} has expired; {again}.") from None
    except signing.BadSignature:
        raise InvalidLink(f"{what} is not valid.") from None
    if not isinstance(payload, shape):
        raise InvalidLink(f"{what} is not valid.")
    return payload


def active_user_of(payload: dict[str, object]) -> User | None:
    """The active account a signed link's payload names by its `user` key."""
    user_id = payload.get("user")
    if not isinstance(user_id, int):
        return None
    return User.objects.filter(pk=user_id, is_active=True).first()


def user_from_verification_token(token: str) -> tuple[User, str]:
    """The person and the address a verification link was sent for."""
    payload: dict[str, object] = read_signed_link(
        token,
        dict,
        salt=VERIFY_EMAIL_SALT,
        max_age=settings.EMAIL_VERIFICATION_MAX_AGE,
        what="This verification link",
        again="ask for a new one",
    )
    user = active_user_of(payload)
    email = str(payload.get("email", ""))
    if user is None or user.email.lower() != email:
        # The address changed since the link was sent: the link proves nothing about the new one.
        raise InvalidLink("This verification link is for an address that is no longer yours.")
    return user, email


# --- Organisations and members ----------------------------------------------------------------


def organization_for_user(user: User | AnonymousUser) -> Organization | None:
    """The organisation a signed-in person acts for when nothing else is known.

    Prefer `accounts.actors.actor_of(request).organization`, which follows the person's choice.
    """
    if not user.is_authenticated:
        return None
    membership = (
        Membership.objects.filter(user=user)
        .select_related("organization")
        .order_by("created_at", "id")
        .first()
    )
    return membership.organization if membership else None


def memberships_of(user: User) -> QuerySet[Membership]:
    """The organisations a person belongs to, for the switcher."""
    return (
        Membership.objects.filter(user=user)
        .select_related("organization")
        .order_by("organization__name", "created_at")
    )


def managers_of(organization: Organization) -> QuerySet[User]:
    """The active owners and admins of an organisation (who to e-mail about it)."""
    return User.objects.filter(
        is_active=True,
        memberships__organization=organization,
        memberships__role__in=MANAGER_ROLES,
    ).order_by("id")


def has_verified_manager(organization: Organization) -> bool:
    """Whether an active owner or admin has a verified current address (`has_verified_email` of
    one of `managers_of`)."""
    return bool(standing_facts(organization).verified_manager_domains)


def require_organization(actor: Actor) -> Organization:
    if actor.organization is None:
        raise Forbidden("You are not a member of any organisation.")
    return actor.organization


def require_role(actor: Actor, *roles: str) -> Organization:
    """The actor's organisation, if the actor is a person with one of these roles in it.

    Managing an organisation is for people: no token scope grants it.
    """
    if actor.token is not None:
        raise Forbidden("API tokens cannot manage the organisation; sign in as an owner or admin.")
    organization = require_organization(actor)
    if not actor.has_role(*roles):
        names = " or ".join(roles)
        raise Forbidden(f"Only an {names} of the organisation can do this.")
    return organization


def require_manager(actor: Actor) -> Organization:
    return require_role(actor, *MANAGER_ROLES)


def require_scope(actor: Actor, scope: str) -> None:
    if not actor.has_scope(scope):
        raise Forbidden(f"This API token lacks the {scope} scope.")


def members_for(actor: Actor) -> QuerySet[Membership]:
    """Every member may see who else is in the organisation; tokens may not."""
    if actor.token is not None:
        raise Forbidden("API tokens cannot read the organisation's members.")
    organization = require_organization(actor)
    return (
        Membership.objects.filter(organization=organization)
        .select_related("user")
        .order_by("created_at", "id")
    )


def get_member_for(actor: Actor, member_id: uuid.UUID | str) -> Membership:
    """One member of the actor's organisation; 404 whether another's exists or not."""
    membership = _by_id(members_for(actor), "public_id", member_id)
    if membership is None:
        raise Http404("No such member.")
    return membership


def owner_count(organization: Organization) -> int:
    return Membership.objects.filter(organization=organization, role=Membership.Role.OWNER).count()


# --- Invitations ------------------------------------------------------------------------------


def invitations_for(actor: Actor) -> QuerySet[Invitation]:
    """The pending invitations of the actor's organisation (expired ones included, marked)."""
    organization = require_manager(actor)
    return (
        Invitation.objects.filter(organization=organization, status=Invitation.Status.PENDING)
        .select_related("invited_by")
        .order_by("-created_at")
    )


def get_invitation_for(actor: Actor, invitation_id: uuid.UUID | str) -> Invitation:
    invitation = _by_id(invitations_for(actor), "id", invitation_id)
    if invitation is None:
        raise Http404("No such invitation.")
    return invitation


def invitation_from_token(token: str) -> Invitation:
    """The invitation a link was sent for, if the link is genuine, unexpired and unused."""
    invitation_id = read_signed_link(
        token,
        str,
        salt=INVITATION_SALT,
        max_age=settings.INVITATION_MAX_AGE,
        what="This invitation link",
        again="ask for a new one",
    )
    invitation = (
        Invitation.objects.select_related("organization", "invited_by")
        .filter(id=invitation_id)
        .first()
    )
    if invitation is None or invitation.status == Invitation.Status.REVOKED:
        raise InvalidLink("This invitation was withdrawn.")
    if invitation.status == Invitation.Status.ACCEPTED:
        raise InvalidLink("This invitation has already been used.")
    if invitation.expires_at <= timezone.now():
        raise InvalidLink("This invitation has expired; ask for a new one.")
    return invitation


# --- Domains and the workplace ----------------------------------------------------------------


def verified_manager_domains(organization: Organization) -> set[str]:
    """The domains of the verified current addresses of the organisation's owners and admins."""
    return standing_facts(organization).verified_manager_domains


def domains_for(actor: Actor) -> QuerySet[Domain]:
    organization = require_manager(actor)
    return Domain.objects.filter(organization=organization).order_by("created_at", "id")


def get_domain_for(actor: Actor, domain_id: uuid.UUID | str) -> Domain:
    domain = _by_id(domains_for(actor), "id", domain_id)
    if domain is None:
        raise Http404("No such domain.")
    return domain


def is_verified_domain(domain: str, verified_domains: set[str]) -> bool:
    return domain in verified_domains and not is_public_email_domain(domain)


def workplace_domain(organization: Organization) -> str | None:
    """The organisation's verified workplace domain, or None.

    A claimed domain is verified while an owner or admin has a verified address there and it
    is not a public mail provider; the earliest claim wins when several are.
    """
    return standing_facts(organization).workplace_domain


@dataclass(frozen=True)
class StandingFacts:
    """What an organisation's tier is decided on, besides its evaluations."""

    claimed_domains: list[str]  # earliest claim first
    # The domains of the verified current addresses of its active owners and admins.
    verified_manager_domains: set[str]

    @property
    def workplace_domain(self) -> str | None:
        verified = self.verified_manager_domains
        return next((d for d in self.claimed_domains if is_verified_domain(d, verified)), None)


# The rows the tier is decided on, for standing_facts and for statements that read more besides
# (diagnosis.selectors.submission_facts): (tag, value, at, id), tag 0 for a claimed domain (at
# and id its claim's, for the order), 1 for a manager's verified address. `organization_id` is
# the organisation's id in the statement: a parameter (`%s`, by default) or a column of a
# statement that found the organisation itself (diagnosis.selectors.token_with_submission_facts).
# Its parameters are standing_rows_params'.
def standing_rows_sql(organization_id: str = "%s") -> str:
    return (
        "SELECT 0 AS tag, d.domain AS value, d.created_at AS at, d.id AS id"  # noqa: S608 - no value in it
        f" FROM accounts_domain d WHERE d.organization_id = {organization_id}"
        " UNION ALL"
        " SELECT 1, v.email, NULL, NULL FROM accounts_verifiedemail v"
        " JOIN auth_user u ON u.id = v.user_id"
        " JOIN accounts_membership m ON m.user_id = u.id"
        # MANAGER_ROLES, one parameter each (a third role would fail loudly on the count)
        f" WHERE m.organization_id = {organization_id} AND m.role IN (%s, %s)"
        " AND u.is_active AND u.email <> '' AND v.email = LOWER(u.email)"
    )


STANDING_ROWS_SQL = standing_rows_sql()

# Only the tag and the value leave the statement: the claim's time orders the rows, and loading
# it would cost a timestamp's conversion for nothing.
_STANDING_FACTS_SQL = f"SELECT tag, value FROM ({STANDING_ROWS_SQL}) facts ORDER BY tag, at, id"  # noqa: S608 - no value in it


def standing_rows_params(organization: Organization | None) -> list[SQLValue]:
    """The parameters of standing_rows_sql(): None when the statement names the organisation
    itself (then only the roles are parameters)."""
    if organization is None:
        return [*MANAGER_ROLES]
    organization_id = sql.param(Domain, "organization", organization.pk)
    return [organization_id, organization_id, *MANAGER_ROLES]


def standing_facts_of(rows: Iterable[tuple[int, str]]) -> StandingFacts:
    """StandingFacts from the (tag, value) of STANDING_ROWS_SQL's rows, in its order."""
    claimed_domains: list[str] = []
    verified_manager_domains: set[str] = set()
    for tag, value in rows:
        if tag == 0:
            claimed_domains.append(value)
        else:
            verified_manager_domains.add(domain_of(value))
    return StandingFacts(claimed_domains, verified_manager_domains)


def standing_facts(organization: Organization) -> StandingFacts:
    """The claimed domains and the managers' verified domains, in one statement: the tier of
    every submission asks it (plumbing/sql.py says why it is not ORM).

    A manager's address is verified while a VerifiedEmail holds their current address, lower-
    cased (`has_verified_email`).
    """
    return standing_facts_of(sql.fetch_all(_STANDING_FACTS_SQL, standing_rows_params(organization)))


@cache
def organization_join_sql(alias: str, foreign_key: str) -> tuple[str, str]:
    """For a statement that reads a row with its organisation, as `select_related(
    "organization")` would: the organisation's columns for the SELECT list (`organization_of`
    makes the instance of them), and the `LEFT JOIN` of its table as `alias` on `foreign_key`
    (a qualified column of the row's table; NULL for a visitor's row joins nothing)."""
    return (
        sql.columns(Organization, alias),
        f"LEFT JOIN accounts_organization {alias} ON {alias}.id = {foreign_key}",
    )


def organization_of(values: Sequence[object]) -> Organization:
    """The Organization of `organization_join_sql`'s columns in a row."""
    return sql.instance(Organization, values)


# --- API tokens -------------------------------------------------------------------------------


@cache
def _live_token_sql() -> str:
    return live_token_sql()


def live_token_sql(extra_columns: str = "") -> str:
    """The live token of a digest and its organisation: their columns (token_of_row reads them),
    then `extra_columns` (`, …`: more of the same row, which may read the token as `t` and the
    organisation as `o`). Its parameters: those of `extra_columns`, then live_token_params'."""
    # Built on first use: the columns' quoting is the connection's.
    return (
        f"SELECT {sql.columns(ApiToken, 't')}, {sql.columns(Organization, 'o')}{extra_columns}"  # noqa: S608 - column names only
        " FROM accounts_apitoken t JOIN accounts_organization o ON o.id = t.organization_id"
        " WHERE t.digest = %s AND t.revoked_at IS NULL"
        " AND (t.expires_at IS NULL OR t.expires_at > %s)"
    )


def live_token_params(secret: str) -> list[SQLValue] | None:
    """live_token_sql's parameters for this secret; None for a secret that is not well formed
    (its format and checksum are checked first, so garbage never reaches the database)."""
    if not tokens.is_well_formed(secret):
        return None
    return [tokens.hash_secret(secret), sql.param(ApiToken, "expires_at", timezone.now())]


def token_of_row(values: Sequence[object]) -> ApiToken:
    """The token of a live_token_sql row, its organisation loaded (the columns after them are
    the caller's)."""
    width = len(ApiToken._meta.concrete_fields)
    token = sql.instance(ApiToken, values[:width])
    token.organization = sql.instance(
        Organization, values[width : width + len(Organization._meta.concrete_fields)]
    )
    return token


def token_for_secret(secret: str) -> ApiToken | None:
    """The live token with this secret, its organisation loaded: not revoked, not expired. None
    otherwise.

    Every API call asks this: the statement is written once (plumbing/sql.py), not compiled per
    call. A submission asks it with its organisation's facts in the same statement
    (diagnosis.selectors.token_with_submission_facts).
    """
    params = live_token_params(secret)
    if params is None:
        return None
    rows = sql.fetch_all(_live_token_sql(), params)
    return token_of_row(rows[0]) if rows else None


def tokens_for(actor: Actor) -> QuerySet[ApiToken]:
    """The organisation's tokens, live and revoked, newest first."""
    organization = require_manager(actor)
    return (
        ApiToken.objects.filter(organization=organization)
        .select_related("created_by")
        .order_by("-created_at")
    )


def get_token_for(actor: Actor, token_id: uuid.UUID | str) -> ApiToken:
    token = _by_id(tokens_for(actor), "id", token_id)
    if token is None:
        raise Http404("No such token.")
    return token


# --- Masking rules ----------------------------------------------------------------------------


def masking_rules_for(actor: Actor) -> QuerySet[MaskingRule]:
    """The organisation's masking rules, earliest first: every member may read them, since they
    shape what the organisation's results show; tokens may not (as with the member list)."""
    if actor.token is not None:
        raise Forbidden("API tokens cannot read the organisation's masking rules.")
    organization = require_organization(actor)
    return (
        MaskingRule.objects.filter(organization=organization)
        .select_related("created_by")
        .order_by("created_at", "id")
    )


def get_masking_rule_for(actor: Actor, rule_id: uuid.UUID | str) -> MaskingRule:
    rule = _by_id(masking_rules_for(actor), "id", rule_id)
    if rule is None:
        raise Http404("No such masking rule.")
    return rule


# An organisation's masking rules for statements that read more besides (diagnosis.selectors.
# submission_facts): (value, kind, label, at, id), `at` and `id` the order they were made in.
# `organization_id` as in standing_rows_sql. Its parameters are masking_rule_rows_params'.
def masking_rule_rows_sql(organization_id: str = "%s") -> str:
    return (
        "SELECT r.value AS value, r.kind AS kind, r.label AS label, r.created_at AS at, r.id AS id"  # noqa: S608 - no value in it
        f" FROM accounts_maskingrule r WHERE r.organization_id = {organization_id}"
    )


MASKING_RULE_ROWS_SQL = masking_rule_rows_sql()


def masking_rule_rows_params(organization: Organization | None) -> list[SQLValue]:
    """None when the statement names the organisation itself: no parameter."""
    if organization is None:
        return []
    return [sql.param(MaskingRule, "organization", organization.pk)]


def masking_rules_sql(organization_id: str) -> str:
    """For a statement that reads the rules with more besides (the pipeline's claim,
    diagnosis.services.lifecycle): a scalar subquery giving the rules of the organisation whose
    id is `organization_id` (a column of the outer statement) as a JSON array of [kind, value,
    label] in `masking_rules_of`'s order, NULL when it has none (a visitor's: NULL id).
    PostgreSQL's JSON functions: the embedded mode (SQLite) reads them with masking_rules_of."""
    return (
        "(SELECT json_agg(json_build_array(r.kind, r.value, r.label)"  # noqa: S608 - a column
        " ORDER BY r.created_at, r.id)"
        f" FROM accounts_maskingrule r WHERE r.organization_id = {organization_id})"
    )


def masking_rules_from(value: object) -> list[Rule]:
    """The rules of `masking_rules_sql`'s value in a row (the driver may give JSON as text)."""
    rows = cast("list[list[str]] | None", json.loads(value) if isinstance(value, str) else value)
    return [Rule(kind, text, label) for kind, text, label in rows or ()]  # type: ignore[arg-type]


def masking_rules_of(organization_id: uuid.UUID | None) -> list[Rule]:
    """The rules the mask stage runs for a diagnosis of this organisation (None: a visitor's,
    which has none), as the library takes them."""
    if organization_id is None:
        return []
    # Every submission (its file name is masked) and every diagnosis read them: written once.
    rows = sql.fetch_all(
        "SELECT kind, value, label FROM accounts_maskingrule WHERE organization_id = %s"
        " ORDER BY created_at, id",
        [sql.param(MaskingRule, "organization", organization_id)],
    )
    return [
        Rule(kind, value, label)  # the kind column's choices
        for kind, value, label in rows
    ]


_Row = TypeVar("_Row", bound=Model)


def _by_id(queryset: QuerySet[_Row], field: str, value: uuid.UUID | str) -> _Row | None:
    """The row of `queryset` whose UUID `field` is `value`; None for a malformed id too."""
    try:
        key = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None
    return queryset.filter(**{field: key}).first()
