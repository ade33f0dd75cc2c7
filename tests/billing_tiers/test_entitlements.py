from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from accounts.actors import Actor
from accounts.services import add_member, mark_email_verified, sign_up
from billing_tiers.entitlements import entitlements_for, tier_for, upgrade_from
from billing_tiers.selectors import entitlements_for_organization, includes_fix_steps
from billing_tiers.services import redeem_evaluation_code
from tests.billing_tiers.conftest import person, visitor

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _tier(client) -> tuple[str, int]:
    body = client.get("/api/v1/quota").json()
    return body["tier"], body["limit"]


def test_a_visitor_is_anonymous(api):
    assert _tier(api) == ("anonymous", 3)


def test_an_organisation_whose_managers_are_unverified_is_free(alice_api, bob_api, acme_api):
    assert _tier(alice_api) == ("free", 3)
    assert _tier(bob_api) == ("free", 3)
    assert _tier(acme_api) == ("free", 3)


def test_a_verified_owner_makes_the_organisation_verified_for_every_member(
    alice, alice_api, bob_api, acme_api
):
    mark_email_verified(user=alice)

    assert _tier(alice_api) == ("verified", 10)
    assert _tier(bob_api) == ("verified", 10)  # bob is unverified: the allowance is acme's
    assert _tier(acme_api) == ("verified", 10)


def test_an_owner_verified_at_another_address_or_inactive_does_not_lift_the_organisation(
    alice, acme_api
):
    # The tier asks, in one query, whether an active manager's *current* address is verified,
    # compared case-insensitively as has_verified_email does.
    mark_email_verified(user=alice)
    alice.email = alice.email.upper()
    alice.save(update_fields=["email"])
    assert _tier(acme_api) == ("verified", 10)
    alice.email = "alice@elsewhere.example"
    alice.save(update_fields=["email"])
    assert _tier(acme_api) == ("free", 3)
    mark_email_verified(user=alice)
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert _tier(acme_api) == ("free", 3)


def test_a_verified_member_without_a_role_does_not_lift_the_organisation(bob, bob_api):
    mark_email_verified(user=bob)

    assert _tier(bob_api) == ("free", 3)


def test_a_verified_admin_lifts_the_organisation(acme, alice_api, django_user_model):
    dana = django_user_model.objects.create_user("dana", "dana@acme.example", "pw-dana-123")
    add_member(organization=acme, user=dana, role="admin")
    mark_email_verified(user=dana)

    assert _tier(alice_api) == ("verified", 10)


def test_a_personal_organisation_follows_its_persons_own_email():
    from tests.billing_tiers.conftest import logged_in

    user = sign_up(email="erin@example.org", password="a-long-pass-phrase-9")
    client = logged_in(user)
    assert _tier(client) == ("free", 3)

    mark_email_verified(user=user)
    assert _tier(client) == ("verified", 10)


def test_a_person_without_an_organisation_follows_their_email(django_user_model):
    frank = django_user_model.objects.create_user("frank", "frank@example.org", "pw-frank-123")
    actor = Actor(organization=None, user=frank)
    assert tier_for(actor) == "free"

    mark_email_verified(user=frank)
    assert tier_for(actor) == "verified"


def test_a_verified_workplace(acme_workplace, alice_api, bob_api, acme_api):
    assert _tier(alice_api) == ("workplace", 20)
    assert _tier(bob_api) == ("workplace", 20)
    assert _tier(acme_api) == ("workplace", 20)


def test_the_tier_follows_the_evaluation_window(acme_workplace, alice, acme_api, issue_code, clock):
    start = clock.set(timezone.now())
    code = issue_code(days=14, daily_limit=40)
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=code)

    # A token, not a session: sessions would expire over the fortnight.
    assert _tier(acme_api) == ("scale", 40)
    clock.set(start + timedelta(days=14) - timedelta(seconds=1))
    assert _tier(acme_api) == ("scale", 40)
    clock.set(start + timedelta(days=14))
    assert _tier(acme_api) == ("workplace", 20)


def test_an_evaluation_counts_only_while_the_domain_is_verified(
    acme_workplace, alice, alice_api, issue_code
):
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code())
    alice.email = "alice@elsewhere.example"  # a changed address is unverified
    alice.save(update_fields=["email"])

    assert _tier(alice_api) == ("free", 3)


def test_what_each_tier_includes(acme_workplace, alice, issue_code):
    anonymous = entitlements_for(visitor())
    assert (anonymous.fix_steps, anonymous.history, anonymous.history_days) == (False, False, None)
    assert anonymous.result_link_hours == 24
    assert (anonymous.alerts, anonymous.follow_up_questions) == (False, False)

    workplace = entitlements_for(person(alice, acme_workplace))
    assert (workplace.fix_steps, workplace.history, workplace.history_days) == (True, True, 365)
    assert workplace.result_link_hours is None
    assert (workplace.alerts, workplace.follow_up_questions) == (False, False)

    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code())
    scale = entitlements_for(person(alice, acme_workplace))
    assert (scale.tier, scale.daily_diagnoses) == ("scale", 50)
    assert (scale.alerts, scale.follow_up_questions) == (True, True)


def test_one_fix_step_gate_for_requests_and_the_pipeline(acme):
    assert includes_fix_steps(visitor()) is False
    assert includes_fix_steps(None) is False  # a visitor's diagnosis in the pipeline
    assert includes_fix_steps(acme) is True
    assert includes_fix_steps(Actor(organization=acme)) is True
    assert entitlements_for_organization(acme).tier == "free"


def test_the_upgrade_is_the_next_tier_with_a_larger_allowance(settings):
    from billing_tiers.entitlements import entitlements_of

    anonymous = upgrade_from(entitlements_of("anonymous"))
    assert anonymous is not None
    assert (anonymous.tier, anonymous.daily_diagnoses) == ("verified", 10)
    assert anonymous.how.startswith("Sign up, then verify your e-mail")
    workplace = upgrade_from(entitlements_of("workplace"))
    assert workplace is not None
    assert workplace.tier == "scale"
    assert upgrade_from(entitlements_of("scale")) is None

    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 5}
    free = upgrade_from(entitlements_of("anonymous"))
    assert free is not None
    assert (free.tier, free.how) == ("free", "Sign up")


def test_the_numbers_come_from_the_environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIER_")}
    env.update(
        TIER_FREE_DAILY_DIAGNOSES="7", TIER_SCALE_HISTORY_DAYS="30", ANONYMOUS_RESULT_HOURS="6"
    )
    code = (
        "import config.settings as s; "
        "print(s.TIER_DAILY_DIAGNOSES['free'], s.TIER_HISTORY_DAYS['scale'], "
        "s.ANONYMOUS_RESULT_HOURS)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["7", "30", "6"]

    env["TIER_VERIFIED_DAILY_DIAGNOSES"] = "ten"
    bad = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0
    assert "TIER_VERIFIED_DAILY_DIAGNOSES" in bad.stderr
