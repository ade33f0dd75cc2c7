"""Reads and access checks: entitlements, the quota status and its headers, evaluations."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from accounts import selectors as accounts_selectors
from accounts.actors import Actor
from accounts.models import Organization
from billing_tiers.entitlements import (
    Entitlements,
    active_evaluation,
    entitlements_for,
    entitlements_for_organization,
    every_organization_tier_includes,
    tier_for,
)
from billing_tiers.models import Evaluation, EvaluationRequest, QuotaCharge, QuotaUsage
from billing_tiers.tiers import evaluation_tier, shortest_history_days, unlocking_label
from plumbing import sql

if TYPE_CHECKING:
    from plumbing.sql import SQLValue

__all__ = [
    "QUOTA_USED_SQL",
    "EvaluationOverview",
    "QuotaStatus",
    "active_evaluation",
    "charge_for",
    "entitlements_for",
    "entitlements_for_organization",
    "evaluation_offer",
    "evaluation_overview",
    "evaluation_requests_for",
    "get_evaluation_request_for",
    "includes_fix_steps",
    "organization_subject",
    "organization_subject_sql",
    "quota_status",
    "quota_subject",
    "quota_used_params",
    "quota_used_sql",
    "rate_limit_headers",
    "shortest_history_days",
    "tier_for",
    "unlocking_label",
    "utc_day",
]


def includes_fix_steps(subject: Actor | Organization | None) -> bool:
    """The one gate on fix steps, commands and verification commands in results.

    Pass the request's actor; code that has only a diagnosis (the pipeline) passes its
    organisation, or None for a visitor's diagnosis.
    """
    if isinstance(subject, Actor):
        return entitlements_for(subject).fix_steps
    if subject is not None and every_organization_tier_includes("fix_steps"):
        # Whatever tier an organisation is on includes them: no need to work out which (that
        # takes queries, once per diagnosis in the pipeline). Checked, not assumed, so that a
        # tier without fix steps would bring the look back.
        return True
    return entitlements_for_organization(subject).fix_steps


# --- The daily quota ----------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaStatus:
    tier: str  # its name
    limit: int
    used: int
    remaining: int
    reset: datetime  # the next UTC midnight, when the day's count starts again

    def seconds_to_reset(self) -> int:
        return max(0, math.ceil((self.reset - timezone.now()).total_seconds()))


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def next_reset(moment: datetime) -> datetime:
    return datetime.combine(utc_day(moment) + timedelta(days=1), time.min, tzinfo=UTC)


def quota_subject(actor: Actor) -> str:
    """Who a charge counts against: the organisation (members and tokens share it), a person
    with no organisation yet, or a visitor's keyed address hash."""
    if actor.organization is not None:
        return organization_subject(actor.organization.pk)
    if actor.user is not None:
        return f"user:{actor.user.pk}"
    if actor.anonymous_subject:
        return f"anon:{actor.anonymous_subject}"
    raise ValueError("this actor has no quota subject (a visitor without an address hash)")


def organization_subject(organization_id: uuid.UUID) -> str:
    """quota_subject of an organisation's actor (its members and tokens)."""
    return f"org:{organization_id}"


def organization_subject_sql(organization_id: str) -> str:
    """organization_subject in SQL, of the statement's column of the organisation's id (a UUID,
    whose text is Python's: lower case, with hyphens)."""
    return f"'org:' || CAST({organization_id} AS TEXT)"


# Today's use of one subject's quota (no row: none yet), read by every API answer and by
# statements that read more besides (diagnosis.selectors.submission_facts): written once, not
# compiled per call (plumbing/sql.py). `subject` is the subject in the statement: a parameter
# (`%s`, by default) or organization_subject_sql of a column. Its parameters are
# quota_used_params'.
def quota_used_sql(subject: str = "%s") -> str:
    return (
        "SELECT q.used AS used FROM billing_tiers_quotausage q"  # noqa: S608 - no value in it
        f" WHERE q.subject = {subject} AND q.day = %s"
    )


QUOTA_USED_SQL = quota_used_sql()


def quota_used_params(subject: str | None, day: date) -> list[SQLValue]:
    """None when the statement names the subject itself: only the day is a parameter."""
    day_param = sql.param(QuotaUsage, "day", day)
    return [day_param] if subject is None else [subject, day_param]


def quota_status(
    actor: Actor, *, entitlements: Entitlements | None = None, used: int | None = None
) -> QuotaStatus:
    """Today's limit, use and reset for the actor's subject. Reads only: never charges.

    Inside the transaction that charged, it sees that charge. `used`: today's use, when the
    caller has read it already (a submission, with what else it reads).
    """
    entitlements = entitlements or entitlements_for(actor)
    now = timezone.now()
    if used is None:
        rows = sql.fetch_all(QUOTA_USED_SQL, quota_used_params(quota_subject(actor), utc_day(now)))
        used = int(rows[0][0]) if rows else 0
    limit = entitlements.daily_diagnoses
    return QuotaStatus(
        tier=entitlements.tier,
        limit=limit,
        used=used,
        remaining=max(0, limit - used),
        reset=next_reset(now),
    )


def rate_limit_headers(status: QuotaStatus) -> dict[str, str]:
    """The quota as response headers, in both conventions clients look for.

    `RateLimit-Reset` is the number of seconds until the quota resets (IETF
    draft-ietf-httpapi-ratelimit-headers); `X-RateLimit-Reset` is the Unix time of the reset,
    in seconds, as GitHub and most X- style clients expect.
    """
    limit, remaining = str(status.limit), str(status.remaining)
    return {
        "RateLimit-Limit": limit,
        "RateLimit-Remaining": remaining,
        "RateLimit-Reset": str(status.seconds_to_reset()),
        "X-RateLimit-Limit": limit,
        "X-RateLimit-Remaining": remaining,
        "X-RateLimit-Reset": str(int(status.reset.timestamp())),
    }


def charge_for(*, reference: str | uuid.UUID) -> QuotaCharge | None:
    """The charge made for `reference` (a diagnosis id), if any."""
    return QuotaCharge.objects.filter(reference=str(reference)).first()


# --- Evaluations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaluationOffer:
    """What the pages that offer an evaluation say of it (the tier it opens, from the table)."""

    tier_label: str
    days: int
    daily_diagnoses: int  # a new code's default allowance


def evaluation_offer() -> EvaluationOffer:
    tier = evaluation_tier()
    return EvaluationOffer(
        tier_label=tier.label, days=settings.EVALUATION_DAYS, daily_diagnoses=tier.daily_diagnoses
    )


def evaluation_requests_for(actor: Actor) -> QuerySet[EvaluationRequest]:
    organization = accounts_selectors.require_manager(actor)
    return EvaluationRequest.objects.filter(organization=organization).order_by("-created_at")


def get_evaluation_request_for(actor: Actor, request_id: uuid.UUID | str) -> EvaluationRequest:
    """One request of the actor's organisation; 404 whether another's exists or not."""
    request = evaluation_requests_for(actor).filter(id=request_id).first()
    if request is None:
        raise Http404("No such evaluation request.")
    return request


@dataclass(frozen=True)
class EvaluationOverview:
    """What the /evaluation/ page shows the actor."""

    organization: Organization | None
    entitlements: Entitlements
    can_manage: bool  # an owner or admin (a person, not a token)
    workplace_domain: str | None
    evaluation: Evaluation | None  # the running one
    requests: list[EvaluationRequest]  # managers only, newest first

    @property
    def open_request(self) -> EvaluationRequest | None:
        return next((r for r in self.requests if r.status == EvaluationRequest.Status.OPEN), None)


def evaluation_overview(actor: Actor) -> EvaluationOverview:
    organization = actor.organization
    can_manage = organization is not None and actor.token is None and actor.manages_organization
    return EvaluationOverview(
        organization=organization,
        entitlements=entitlements_for(actor),
        can_manage=can_manage,
        workplace_domain=accounts_selectors.workplace_domain(organization)
        if organization
        else None,
        evaluation=active_evaluation(organization) if organization else None,
        requests=list(evaluation_requests_for(actor)[:20]) if can_manage else [],
    )
