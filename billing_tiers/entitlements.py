"""Who is on which tier, and what each tier may do: the one answer to "what may they do".

The tier is derived, never stored:
- no organisation and no person (a visitor) → anonymous;
- an organisation with a verified workplace domain → workplace, or scale while one of its
  evaluations' windows contains now (when the window closes the tier falls back by itself);
- an organisation one of whose managers (owner or admin) has a verified e-mail → verified. A
  personal organisation is owned by its person, so it follows that person's own e-mail; in a
  shared organisation the allowance belongs to the organisation, so an unverified member acting
  for it gets the organisation's tier, and a verified member who manages nothing does not lift it;
- otherwise → free. A person with no organisation yet is verified or free by their own e-mail.

Allowances are plain data in settings (TIER_* in config/settings.py); a Scale evaluation's daily
allowance is the one on its code.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from accounts import selectors as accounts_selectors
from accounts.actors import Actor
from accounts.models import Organization
from accounts.selectors import StandingFacts
from billing_tiers.models import Evaluation, Tier

TIER_ORDER = (Tier.ANONYMOUS, Tier.FREE, Tier.VERIFIED, Tier.WORKPLACE, Tier.SCALE)

# How to reach each tier, for the 429 answer and the pages.
_HOW_TO_REACH = {
    Tier.FREE: "Sign up",
    Tier.VERIFIED: "Verify your e-mail address",
    Tier.WORKPLACE: "Verify your organisation's e-mail domain (your workplace)",
    Tier.SCALE: "Request a Scale evaluation code at /evaluation/",
}


@dataclass(frozen=True)
class Entitlements:
    tier: Tier
    daily_diagnoses: int
    fix_steps: bool  # remediation steps, commands and the verification command in results
    history: bool  # diagnoses are kept in the organisation's history
    history_days: int | None  # how long history is kept; None without history
    result_link_hours: int | None  # anonymous: how long a result stays reachable by its link
    alerts: bool
    follow_up_questions: bool


@dataclass(frozen=True)
class Upgrade:
    """The next tier with a larger daily allowance, and how to get there."""

    tier: Tier
    daily_diagnoses: int
    how: str


def active_evaluation(organization: Organization) -> Evaluation | None:
    """The evaluation whose window contains now, if any (the latest ending, should two overlap)."""
    now = timezone.now()
    return (
        Evaluation.objects.filter(organization=organization, starts_at__lte=now, ends_at__gt=now)
        .order_by("-ends_at")
        .first()
    )


def _organization_standing(
    organization: Organization, facts: StandingFacts | None
) -> tuple[Tier, Evaluation | None]:
    facts = facts or accounts_selectors.standing_facts(organization)  # one statement
    if facts.workplace_domain:
        evaluation = active_evaluation(organization)
        return (Tier.SCALE, evaluation) if evaluation else (Tier.WORKPLACE, None)
    if facts.verified_manager_domains:
        return Tier.VERIFIED, None
    return Tier.FREE, None


def _standing(actor: Actor, facts: StandingFacts | None = None) -> tuple[Tier, Evaluation | None]:
    # Decided on the organisation and the person, not on `actor.is_anonymous`: the pipeline
    # builds an actor from a diagnosis' organisation alone.
    if actor.organization is not None:
        return _organization_standing(actor.organization, facts)
    if actor.user is not None:
        return (
            Tier.VERIFIED if accounts_selectors.has_verified_email(actor.user) else Tier.FREE
        ), None
    return Tier.ANONYMOUS, None


def tier_for(actor: Actor) -> Tier:
    return _standing(actor)[0]


def entitlements_of(tier: Tier, *, daily_diagnoses: int | None = None) -> Entitlements:
    """A tier's allowances from settings; `daily_diagnoses` overrides (a Scale code's own)."""
    anonymous = tier == Tier.ANONYMOUS
    scale = tier == Tier.SCALE
    history_days = None if anonymous else settings.TIER_HISTORY_DAYS[tier.value]
    return Entitlements(
        tier=tier,
        daily_diagnoses=(
            settings.TIER_DAILY_DIAGNOSES[tier.value]
            if daily_diagnoses is None
            else daily_diagnoses
        ),
        fix_steps=not anonymous,
        history=not anonymous,
        history_days=history_days,
        result_link_hours=settings.ANONYMOUS_RESULT_HOURS if anonymous else None,
        alerts=scale,
        follow_up_questions=scale,
    )


def entitlements_for(actor: Actor, *, standing: StandingFacts | None = None) -> Entitlements:
    """`standing`: the organisation's StandingFacts, when the caller has read them already (a
    submission reads them with what else it needs, in one statement)."""
    tier, evaluation = _standing(actor, standing)
    return entitlements_of(tier, daily_diagnoses=evaluation.daily_limit if evaluation else None)


def entitlements_for_organization(organization: Organization | None) -> Entitlements:
    """For code that has a diagnosis, not a request: its organisation, or None for a visitor's."""
    return entitlements_for(Actor(organization=organization))


def upgrade_from(entitlements: Entitlements) -> Upgrade | None:
    """The first tier above this one whose allowance is larger; None at the top."""
    above = TIER_ORDER[TIER_ORDER.index(entitlements.tier) + 1 :]
    for tier in above:
        daily = settings.TIER_DAILY_DIAGNOSES[tier.value]
        if daily > entitlements.daily_diagnoses:
            how = _HOW_TO_REACH[tier]
            if entitlements.tier == Tier.ANONYMOUS and tier != Tier.FREE:
                how = f"Sign up, then {how[0].lower()}{how[1:]}"
            return Upgrade(tier=tier, daily_diagnoses=daily, how=how)
    return None
