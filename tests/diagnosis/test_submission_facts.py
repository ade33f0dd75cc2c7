"""The one statement a submission reads before staging (diagnosis.selectors.submission_facts)
answers as the three reads it stands for: the tier's facts, the masking rules, today's use."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import ApiToken, Domain, Membership, Organization
from accounts.selectors import masking_rules_of, standing_facts, token_for_secret
from accounts.services import (
    create_api_token,
    create_masking_rule,
    mark_email_verified,
    revoke_api_tokens,
)
from billing_tiers.models import QuotaUsage
from billing_tiers.selectors import quota_status, quota_subject, utc_day
from diagnosis.selectors import SubmissionFacts, submission_facts, token_with_submission_facts

pytestmark = pytest.mark.django_db


def _read_one_by_one(organization: Organization) -> SubmissionFacts:
    actor = Actor(organization=organization)
    return SubmissionFacts(
        standing=standing_facts(organization),
        masking_rules=masking_rules_of(organization.pk),
        used_today=quota_status(actor).used,
        organization_id=organization.pk,
        day=utc_day(timezone.now()),
    )


def _facts(organization: Organization) -> SubmissionFacts:
    """The facts by submission_facts, which must be the reads one by one's, and the same again
    read with one of the organisation's API tokens (token_with_submission_facts)."""
    day = utc_day(timezone.now())
    found = submission_facts(
        organization, quota_subject=quota_subject(Actor(organization=organization)), day=day
    )
    assert found == _read_one_by_one(organization)
    _, secret = create_api_token(organization=organization, created_by=None, name="facts")
    with_token = token_with_submission_facts(secret, day=day)
    assert with_token is not None
    token, facts = with_token
    assert token == token_for_secret(secret)
    assert token.organization == organization
    assert facts == found
    return found


def test_an_organisation_with_nothing_yet(acme: Organization) -> None:
    found = _facts(acme)

    assert found.standing.claimed_domains == []
    assert found.standing.verified_manager_domains == set()
    assert found.masking_rules == []
    assert found.used_today == 0


def test_domains_managers_rules_and_today_s_use_each_come_back_in_order(
    acme: Organization, alice: Any, bob: Any, umbrella: Organization
) -> None:
    Domain.objects.create(organization=acme, domain="b.example")
    Domain.objects.create(organization=acme, domain="acme.example")
    mark_email_verified(user=alice)  # the owner: a manager
    mark_email_verified(user=bob)  # a member: not counted
    for value in ("bluebird", "nightjar", "albatross"):
        create_masking_rule(organization=acme, created_by=alice, kind="term", value=value)
    create_masking_rule(organization=umbrella, created_by=None, kind="term", value="other")
    today = utc_day(timezone.now())
    subject = quota_subject(Actor(organization=acme))
    QuotaUsage.objects.create(subject=subject, day=today, used=7)
    QuotaUsage.objects.create(subject=subject, day=today - timedelta(days=1), used=40)
    QuotaUsage.objects.create(subject=f"org:{umbrella.pk}", day=today, used=2)

    found = _facts(acme)

    assert found.standing.claimed_domains == ["b.example", "acme.example"]  # claim order
    assert found.standing.verified_manager_domains == {"acme.example"}
    assert found.standing.workplace_domain == "acme.example"
    assert [rule.value for rule in found.masking_rules] == ["bluebird", "nightjar", "albatross"]
    assert found.used_today == 7

    Membership.objects.filter(organization=acme, user=bob).update(role=Membership.Role.ADMIN)
    assert _facts(acme).standing.verified_manager_domains == {"acme.example"}


def test_a_token_that_is_not_live_reads_no_facts(acme: Organization, alice: Any) -> None:
    token, secret = create_api_token(organization=acme, created_by=alice, name="old")
    day = utc_day(timezone.now())
    assert token_with_submission_facts(secret, day=day) is not None
    revoke_api_tokens(tokens=ApiToken.objects.filter(pk=token.pk))

    assert token_with_submission_facts(secret, day=day) is None
    assert token_with_submission_facts("rc_live_not-a-token", day=day) is None
    assert token_with_submission_facts(secret[:-1] + "x", day=day) is None


def test_facts_read_with_the_token_are_of_the_day_asked(acme: Organization, alice: Any) -> None:
    _, secret = create_api_token(organization=acme, created_by=alice, name="ci")
    today = utc_day(timezone.now())
    subject = quota_subject(Actor(organization=acme))
    QuotaUsage.objects.create(subject=subject, day=today - timedelta(days=1), used=40)
    QuotaUsage.objects.create(subject=subject, day=today, used=3)

    for day, used in ((today, 3), (today - timedelta(days=1), 40), (today + timedelta(days=1), 0)):
        found = token_with_submission_facts(secret, day=day)
        assert found is not None
        assert (found[1].used_today, found[1].day) == (used, day)
