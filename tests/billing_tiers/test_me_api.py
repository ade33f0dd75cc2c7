"""GET /api/v1/me as billing_tiers extends it: the organisation's tier and running evaluation, and
today's quota, beside what accounts answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User

from billing_tiers.services import charge_quota, redeem_evaluation_code
from tests.billing_tiers.conftest import logged_in, person

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"


def test_a_person_sees_the_tier_and_the_quota_of_their_organisation(alice, acme, alice_api):
    charge_quota(actor=person(alice, acme))

    body = alice_api.get(ME).json()

    assert body["user"]["email"] == "alice@acme.example"
    assert body["organization"]["name"] == "Acme"
    assert body["organization"]["tier"] == "free"
    assert body["organization"]["evaluation_ends_at"] is None
    assert body["quota"]["tier"] == "free"
    assert body["quota"]["limit"] == 3
    assert body["quota"]["used"] == 1
    assert body["quota"]["remaining"] == 2
    assert body["quota"]["reset"].endswith("T00:00:00Z")


def test_a_token_of_an_organisation_on_scale_sees_the_evaluation_end(
    acme_workplace, alice, acme_api, issue_code, clock
):
    clock.set(datetime(2030, 3, 1, 9, 0, tzinfo=UTC))
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code(daily_limit=40))

    body = acme_api.get(ME).json()

    assert body["user"] is None
    assert body["token"]["name"] == "ci"
    assert body["organization"]["tier"] == "scale"
    assert body["organization"]["verified_domain"] == "acme.example"
    assert body["organization"]["evaluation_ends_at"] == "2030-03-15T09:00:00Z"
    assert body["quota"] == {
        "tier": "scale",
        "limit": 40,
        "used": 0,
        "remaining": 40,
        "reset": "2030-03-02T00:00:00Z",
    }


def test_a_person_with_no_organisation_still_has_a_quota(db, api):
    loner = User.objects.create_user("loner", "loner@example.org", "pw-loner-123")

    body = logged_in(loner).get(ME).json()

    assert body["organization"] is None
    assert body["quota"]["tier"] == "free"
    assert api.get(ME).status_code == 401  # a visitor asks /api/v1/quota instead
