"""The tier table: its rows' shape, that no module outside billing_tiers names a tier, and that
adding a tier is one row (a "team" tier, added in a fixture, with no other change)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from accounts.models import Organization
from accounts.services import claim_domain, mark_email_verified
from billing_tiers import tiers
from billing_tiers.entitlements import (
    Standing,
    entitlements_for,
    entitlements_of,
    every_organization_tier_includes,
    upgrade_from,
)
from billing_tiers.errors import QuotaExceeded
from billing_tiers.services import charge_quota
from billing_tiers.tiers import TierRow, all_tiers, unlocking_label
from tests.billing_tiers.conftest import person, visitor
from tests.billing_tiers.tier_names import (
    project_findings,
    python_findings,
    template_findings,
)

# --- No module outside billing_tiers names a tier ------------------------------------------------


def test_no_module_or_template_outside_billing_tiers_names_a_tier() -> None:
    assert project_findings() == []


@pytest.mark.parametrize(
    "source",
    [
        "from billing_tiers.models import Tier\n",
        "def f(e):\n    return e.tier == 'scale'\n",
        "from django.conf import settings\nDAYS = settings.TIER_HISTORY_DAYS\n",
        "def is_scale(entitlements):\n    return False\n",
        "def f():\n    raise ValueError('Alerts come with the Scale tier')\n",
        "DESCRIPTION = 'Webhooks (owners and admins, Workplace tier).'\n",
    ],
)
def test_the_check_finds_each_way_code_names_a_tier(source: str) -> None:
    assert python_findings(source)


@pytest.mark.parametrize(
    "source",
    [
        '"""Alerts (Scale): the docstring explains, it decides nothing."""\n',
        "def f(actor):\n    return actor.is_anonymous  # Django's, a visitor\n",
        "CONTEXT = {'anonymous': True}  # a template's variable\n",
        "def f(e):\n    return e.alerts, e.unlocked_by('alerts')\n",
    ],
)
def test_the_check_leaves_what_names_no_tier(source: str) -> None:
    assert python_findings(source) == []


def test_the_check_reads_a_templates_text_not_its_tags() -> None:
    assert template_findings("<p>Alerts (Scale): webhooks.</p>")
    assert template_findings("<p>{{ x }} Free: a few logs a day</p>")
    assert template_findings('<p>Alerts ({% unlocking_tier "alerts" %}).</p>') == []
    assert template_findings("<h2>Workplace domain</h2>") == []  # accounts' claimed domain


def test_the_check_covers_a_package_added_later(tmp_path: Path) -> None:
    (tmp_path / "newapp" / "templates").mkdir(parents=True)
    (tmp_path / "newapp" / "__init__.py").write_text("")
    (tmp_path / "newapp" / "gates.py").write_text("def f(e):\n    return e.tier == 'scale'\n")
    (tmp_path / "newapp" / "templates" / "page.html").write_text("<p>On Scale only.</p>")
    (tmp_path / "billing_tiers").mkdir()
    (tmp_path / "billing_tiers" / "__init__.py").write_text("")
    (tmp_path / "billing_tiers" / "own.py").write_text("SCALE = 'scale'\n")  # its own: allowed

    found = project_findings(tmp_path)

    assert sorted(found) == [
        "newapp/gates.py line 2: the name 'scale'",
        "newapp/templates/page.html the label 'Scale'",
    ]


# --- The table ----------------------------------------------------------------------------------


def test_each_row_is_named_once_and_has_its_numbers_in_settings() -> None:
    rows = all_tiers()
    assert len({row.name for row in rows}) == len(rows)
    assert len({row.label for row in rows}) == len(rows)
    for row in rows:
        assert row.daily_diagnoses == django_settings.TIER_DAILY_DIAGNOSES[row.name]
        assert row.history_days == (
            django_settings.TIER_HISTORY_DAYS[row.name] if row.history else None
        )
    assert tiers.tier_choices() == [(row.name, row.label) for row in rows]


def test_the_lowest_rule_holds_for_anyone_and_only_it_for_a_visitor(db: Any) -> None:
    standing = Standing(organization=None)
    assert [row for row in all_tiers() if row.reached_when(standing)] == [all_tiers()[0]]
    assert entitlements_for(visitor()).tier == all_tiers()[0].name


def test_which_tier_unlocks_a_feature_is_read_from_the_table() -> None:
    for feature in ("fix_steps", "history", "alerts", "follow_up_questions"):
        lowest = next(row for row in all_tiers() if getattr(row, feature))
        assert unlocking_label(feature) == lowest.label
        assert entitlements_of(all_tiers()[0].name).unlocked_by(feature) == lowest.label


def test_whether_every_organization_tier_includes_a_feature_follows_the_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert every_organization_tier_includes("fix_steps")
    assert not every_organization_tier_includes("alerts")
    without_fix = dataclasses.replace(TEAM, fix_steps=False)
    monkeypatch.setattr(tiers, "TIERS", (*all_tiers(), without_fix))
    assert not every_organization_tier_includes("fix_steps")


# --- Adding a tier is one row -------------------------------------------------------------------

# Reached by an organisation with a verified manager that has claimed a domain not yet verified
# (no manager with an address there): between verified and workplace.
TEAM = TierRow(
    name="team",
    label="Team",
    reached_when=lambda standing: (
        standing.verified and standing.facts is not None and bool(standing.facts.claimed_domains)
    ),
    how_to_reach="Claim your organisation's e-mail domain",
    fix_steps=True,
    history=True,
    alerts=True,
    follow_up_questions=False,
)


@pytest.fixture
def team_tier(monkeypatch: pytest.MonkeyPatch, settings: Any) -> TierRow:
    """The table with the team row inserted above the verified one, and its numbers."""
    rows = all_tiers()
    above = [row.name for row in rows].index("verified") + 1
    monkeypatch.setattr(tiers, "TIERS", (*rows[:above], TEAM, *rows[above:]))
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "team": 15}
    settings.TIER_HISTORY_DAYS = {**settings.TIER_HISTORY_DAYS, "team": 120}
    return TEAM


@pytest.fixture
def acme_team(acme: Organization, alice: Any) -> Organization:
    mark_email_verified(user=alice)  # alice@acme.example
    claim_domain(actor=person(alice, acme), domain="team.example")
    return acme


def test_an_added_tier_is_reached_by_its_rule_and_gives_its_entitlements(
    team_tier: TierRow, acme_team: Organization, alice: Any, bob: Any
) -> None:
    for member in (alice, bob):  # the organisation's tier, whoever acts for it
        entitled = entitlements_for(person(member, acme_team))
        assert (entitled.tier, entitled.tier_label) == ("team", "Team")
        assert (entitled.daily_diagnoses, entitled.history_days) == (15, 120)
        assert (entitled.fix_steps, entitled.alerts, entitled.follow_up_questions) == (
            True,
            True,
            False,
        )
    # A higher rule still wins: the claimed domain verified makes a workplace.
    claim_domain(actor=person(alice, acme_team), domain="acme.example")
    assert entitlements_for(person(alice, acme_team)).tier == "workplace"


def test_without_the_row_the_same_organisation_is_verified(
    acme_team: Organization, alice: Any
) -> None:
    assert entitlements_for(person(alice, acme_team)).tier == "verified"


def test_an_added_tier_sets_the_quota_and_its_upgrades(
    team_tier: TierRow, acme_team: Organization, alice: Any, alice_api: APIClient
) -> None:
    body = alice_api.get("/api/v1/quota").json()
    assert (body["tier"], body["limit"], body["remaining"]) == ("team", 15, 15)

    actor = person(alice, acme_team)
    for _ in range(15):
        charge = charge_quota(actor=actor)
    assert (charge.tier, charge.get_tier_display()) == ("team", "Team")
    with pytest.raises(QuotaExceeded) as refused:
        charge_quota(actor=actor)
    problem = refused.value.extra
    assert (problem["tier"], problem["limit"]) == ("team", 15)
    assert problem["upgrade"]["tier"] == "workplace"  # the next row with a larger allowance
    assert upgrade_from(entitlements_of("verified")).tier == "team"  # type: ignore[union-attr]


def test_an_added_tier_opens_a_feature_gate_and_its_upsell_names_it(
    team_tier: TierRow,
    acme_team: Organization,
    alice_api: APIClient,
    charlie: Any,
    charlie_api: APIClient,
) -> None:
    assert alice_api.get("/api/v1/webhooks").status_code == 200  # alerts come with team

    mark_email_verified(user=charlie)  # umbrella: verified, no domain claimed
    refused = charlie_api.get("/api/v1/webhooks")
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "Alerts come with the Team tier (this organisation is on Verified)."
    )


def test_other_apps_pages_take_the_tier_labels_from_the_table(
    client: Any, alice: Any, acme: Organization, team_tier: TierRow
) -> None:
    assert "Free: diagnose a few logs a day" in client.get("/accounts/signup/").content.decode()
    client.force_login(alice)
    page = client.get("/settings/").content.decode()
    # Alerts now come with the team row, the lowest that has them; evaluations still open Scale.
    assert "with their delivery log (Team):" in page
    assert "may request a Scale evaluation." in page
