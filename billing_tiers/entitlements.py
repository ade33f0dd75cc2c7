"""Who is on which tier, and what it may do: the one answer to "what may they do".

The tier is derived, never stored: the caller is on the highest row of the tier table
(billing_tiers/tiers.py) whose standing rule holds for its `Standing` — the organisation's facts
(its managers' verified addresses, its verified workplace domain, an evaluation window containing
now; when the window closes the tier falls back by itself), or, for a person with no organisation
yet, their own e-mail. A personal organisation is owned by its person, so it follows that
person's own e-mail; in a shared organisation the allowance belongs to the organisation, so an
unverified member acting for it gets the organisation's tier, and a verified member who manages
nothing does not lift it.

Allowances are plain data in settings (TIER_* in config/settings.py); an evaluation's daily
allowance is the one on its code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from django.contrib.auth.models import User
from django.utils import timezone

from accounts import selectors as accounts_selectors
from accounts.actors import Actor
from accounts.models import Organization
from accounts.selectors import StandingFacts
from billing_tiers.models import Evaluation
from billing_tiers.tiers import (
    Feature,
    TierRow,
    all_tiers,
    tier_named,
    tier_reached,
    tiers_above,
    unlocking_tier,
)


@dataclass(frozen=True)
class Entitlements:
    """What a caller may do: every feature asks this, never which tier the caller is on."""

    tier: str  # the tier's name (billing_tiers.tiers)
    tier_label: str
    daily_diagnoses: int
    fix_steps: bool  # remediation steps, commands and the verification command in results
    history: bool  # diagnoses are kept in the organisation's history
    history_days: int | None  # how long history is kept; None without history
    result_link_hours: int | None  # anonymous: how long a result stays reachable by its link
    alerts: bool
    follow_up_questions: bool

    def unlocked_by(self, feature: Feature) -> str:
        """The label of the lowest tier with `feature`, for "X comes with the … tier"."""
        row = unlocking_tier(feature)
        return row.label if row is not None else "no"


@dataclass(frozen=True)
class Upgrade:
    """The next tier with a larger daily allowance, and how to get there."""

    tier: str
    daily_diagnoses: int
    how: str


class Standing:
    """The facts the tier table's rules ask about one caller, each read when first asked: the
    rules run from the top tier down, so a fact only a higher tier needs (an evaluation, a
    query) is read only when the facts below it hold."""

    def __init__(
        self,
        *,
        organization: Organization | None,
        user: User | None = None,
        facts: StandingFacts | None = None,
    ) -> None:
        self.organization = organization
        self.user = user
        self._facts = facts

    @cached_property
    def facts(self) -> StandingFacts | None:
        """The organisation's claimed domains and managers' verified domains (one statement)."""
        if self.organization is None:
            return None
        return self._facts or accounts_selectors.standing_facts(self.organization)

    @property
    def signed_up(self) -> bool:
        return self.organization is not None or self.user is not None

    @cached_property
    def verified(self) -> bool:
        """An owner or admin of the organisation has a verified address; with no organisation,
        the person has."""
        if self.facts is not None:
            return bool(self.facts.verified_manager_domains)
        if self.user is not None:
            return accounts_selectors.has_verified_email(self.user)
        return False

    @property
    def workplace(self) -> bool:
        """The organisation has a verified workplace domain."""
        return self.facts is not None and self.facts.workplace_domain is not None

    @cached_property
    def evaluation(self) -> Evaluation | None:
        return active_evaluation(self.organization) if self.organization is not None else None

    @property
    def evaluating(self) -> bool:
        """One of the organisation's evaluation windows contains now."""
        return self.evaluation is not None


def active_evaluation(organization: Organization) -> Evaluation | None:
    """The evaluation whose window contains now, if any (the latest ending, should two overlap)."""
    now = timezone.now()
    return (
        Evaluation.objects.filter(organization=organization, starts_at__lte=now, ends_at__gt=now)
        .order_by("-ends_at")
        .first()
    )


def _standing_of(actor: Actor, facts: StandingFacts | None = None) -> Standing:
    # Decided on the organisation and the person, not on `actor.is_anonymous`: the pipeline
    # builds an actor from a diagnosis' organisation alone. The tier belongs to the
    # organisation: a person acting for one is on its tier, whatever their own e-mail.
    if actor.organization is not None:
        return Standing(organization=actor.organization, facts=facts)
    return Standing(organization=None, user=actor.user)


def tier_for(actor: Actor) -> str:
    """The name of the actor's tier (for the API's `tier`; features ask `entitlements_for`)."""
    return tier_reached(_standing_of(actor)).name


def _entitlements(row: TierRow, daily_diagnoses: int | None = None) -> Entitlements:
    return Entitlements(
        tier=row.name,
        tier_label=row.label,
        daily_diagnoses=row.daily_diagnoses if daily_diagnoses is None else daily_diagnoses,
        fix_steps=row.fix_steps,
        history=row.history,
        history_days=row.history_days,
        result_link_hours=row.result_link_hours,
        alerts=row.alerts,
        follow_up_questions=row.follow_up_questions,
    )


def entitlements_of(tier: str, *, daily_diagnoses: int | None = None) -> Entitlements:
    """A tier's allowances from the table and settings; `daily_diagnoses` overrides (a code's)."""
    return _entitlements(tier_named(tier), daily_diagnoses)


def entitlements_for(actor: Actor, *, standing: StandingFacts | None = None) -> Entitlements:
    """`standing`: the organisation's StandingFacts, when the caller has read them already (a
    submission reads them with what else it needs, in one statement)."""
    facts = _standing_of(actor, standing)
    row = tier_reached(facts)
    daily = None
    if row.allowance_from_evaluation and facts.evaluation is not None:
        daily = facts.evaluation.daily_limit
    return _entitlements(row, daily)


def entitlements_for_organization(organization: Organization | None) -> Entitlements:
    """For code that has a diagnosis, not a request: its organisation, or None for a visitor's."""
    return entitlements_for(Actor(organization=organization))


def every_organization_tier_includes(feature: Feature) -> bool:
    """Whether whatever tier an organisation is on includes `feature`: the rows a signed-up
    caller can reach (all but those reached by everyone, i.e. the visitors')."""
    visitor = Standing(organization=None)
    return all(row.includes(feature) for row in all_tiers() if not row.reached_when(visitor))


def upgrade_from(entitlements: Entitlements) -> Upgrade | None:
    """The first tier above this one whose allowance is larger; None at the top."""
    current = tier_named(entitlements.tier)
    for row in tiers_above(current):
        daily = row.daily_diagnoses
        if daily > entitlements.daily_diagnoses:
            how = row.how_to_reach
            first_step = tiers_above(current)[0]
            if current is all_tiers()[0] and row is not first_step:
                # From the lowest tier (a visitor's), the step to the next one comes first.
                how = f"{first_step.how_to_reach}, then {how[0].lower()}{how[1:]}"
            return Upgrade(tier=row.name, daily_diagnoses=daily, how=how)
    return None
