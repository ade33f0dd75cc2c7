"""The tier table: each trust tier is one row, and nothing outside billing_tiers names one.

A row says how the tier is reached (its standing rule, a predicate on the caller's `Standing`),
what it includes (fix steps, history, alerts, follow-up questions) and how to reach it, for the
upsell texts. Its numbers (daily allowance, history days) stay in settings, keyed by the row's
name (TIER_DAILY_DIAGNOSES, TIER_HISTORY_DAYS), so that an operator changes them without code.

Rows are in order of trust, lowest first. A caller is on the highest row whose rule holds; the
lowest row's rule always holds. Adding a tier is one row here and its numbers in settings
(docs/tiers.md; tests/billing_tiers/test_tier_table.py adds one in a fixture).

This module imports nothing of the app's models (the models' choices come from it); the rules'
`Standing` is built in billing_tiers.entitlements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from django.conf import settings

if TYPE_CHECKING:
    from billing_tiers.entitlements import Standing

# What a feature may ask of a tier (`Entitlements`'s booleans of the same names).
Feature = Literal["fix_steps", "history", "alerts", "follow_up_questions"]


@dataclass(frozen=True)
class TierRow:
    name: str  # stored on quota charges and answered by the API: never renamed
    label: str  # shown to people
    reached_when: Callable[[Standing], bool]  # the standing rule
    how_to_reach: str  # for the 429 answer and the pages' upsell
    fix_steps: bool  # remediation steps, commands and the verification command in results
    history: bool  # diagnoses are kept in the organisation's history (for history_days)
    alerts: bool
    follow_up_questions: bool
    # Results reachable by their link alone, for ANONYMOUS_RESULT_HOURS (a visitor's).
    result_by_link: bool = False
    # The daily allowance is the running evaluation's (its code's), not the setting's.
    allowance_from_evaluation: bool = False

    def __str__(self) -> str:
        return self.name

    @property
    def daily_diagnoses(self) -> int:
        allowances: dict[str, int] = settings.TIER_DAILY_DIAGNOSES
        return allowances[self.name]

    @property
    def history_days(self) -> int | None:
        if not self.history:
            return None
        days: dict[str, int] = settings.TIER_HISTORY_DAYS
        return days[self.name]

    @property
    def result_link_hours(self) -> int | None:
        return int(settings.ANONYMOUS_RESULT_HOURS) if self.result_by_link else None

    def includes(self, feature: Feature) -> bool:
        included: bool = getattr(self, feature)
        return included


# Lowest first. The evaluation programme's tier is the one whose allowance comes from an
# evaluation (`evaluation_tier`); the pages that offer evaluations ask for it, not for a name.
TIERS: tuple[TierRow, ...] = (
    TierRow(
        name="anonymous",
        label="Anonymous",
        reached_when=lambda standing: True,
        how_to_reach="",
        fix_steps=False,
        history=False,
        alerts=False,
        follow_up_questions=False,
        result_by_link=True,
    ),
    TierRow(
        name="free",
        label="Free",
        reached_when=lambda standing: standing.signed_up,
        how_to_reach="Sign up",
        fix_steps=True,
        history=True,
        alerts=False,
        follow_up_questions=False,
    ),
    TierRow(
        name="verified",
        label="Verified",
        reached_when=lambda standing: standing.verified,
        how_to_reach="Verify your e-mail address",
        fix_steps=True,
        history=True,
        alerts=False,
        follow_up_questions=False,
    ),
    TierRow(
        name="workplace",
        label="Workplace",
        reached_when=lambda standing: standing.workplace,
        how_to_reach="Verify your organisation's e-mail domain (your workplace)",
        fix_steps=True,
        history=True,
        alerts=False,
        follow_up_questions=False,
    ),
    TierRow(
        name="scale",
        label="Scale",
        # The workplace first: the evaluation is only looked up (a query) for a workplace.
        reached_when=lambda standing: standing.workplace and standing.evaluating,
        how_to_reach="Request a Scale evaluation code at /evaluation/",
        fix_steps=True,
        history=True,
        alerts=True,
        follow_up_questions=True,
        allowance_from_evaluation=True,
    ),
)


def all_tiers() -> tuple[TierRow, ...]:
    """The table, lowest first. Read through this function, never cached: a test's fixture
    replaces `TIERS` to add a tier."""
    return TIERS


def tier_named(name: str) -> TierRow:
    for row in all_tiers():
        if row.name == name:
            return row
    raise LookupError(f"no tier is named {name!r}")


def tier_reached(standing: Standing) -> TierRow:
    """The highest row whose rule holds for `standing`."""
    for row in reversed(all_tiers()):
        if row.reached_when(standing):
            return row
    raise LookupError("no tier's rule holds: the lowest row's must always hold")


def tiers_above(row: TierRow) -> tuple[TierRow, ...]:
    table = all_tiers()
    return table[table.index(row) + 1 :]


def unlocking_tier(feature: Feature) -> TierRow | None:
    """The lowest tier that includes `feature`, for "X comes with the … tier"; None if none does."""
    return next((row for row in all_tiers() if row.includes(feature)), None)


def unlocking_label(feature: Feature) -> str:
    row = unlocking_tier(feature)
    return row.label if row is not None else "no"


def evaluation_tier() -> TierRow:
    """The tier an evaluation code opens (the one whose allowance is the code's): the pages
    and e-mails that offer evaluations name it, and a new code's default allowance is its."""
    row = next((row for row in all_tiers() if row.allowance_from_evaluation), None)
    if row is None:
        raise LookupError("no tier takes its allowance from an evaluation")
    return row


def shortest_history_days() -> int:
    """The fewest days any tier keeps history: rows older than that are all the purge looks at."""
    return min(days for row in all_tiers() if (days := row.history_days) is not None)


def tier_choices() -> list[tuple[str, str]]:
    """The rows as a model field's and a serializer's choices (callable: read when asked)."""
    return [(row.name, row.label) for row in all_tiers()]
