"""A workplace owner redeems a Scale evaluation code; the allowance shown becomes 50."""

from __future__ import annotations

from typing import Any

from accounts.actors import actor_for_person
from accounts.services import claim_domain, create_organization, mark_email_verified
from billing_tiers.services import issue_evaluation_codes
from tests.browser.conftest import assert_accessible, screenshot
from tests.browser.test_accounts import sign_in


def test_a_workplace_owner_redeems_a_code_and_gets_50_a_day(page: Any, alice: Any) -> None:
    acme = create_organization(name="Acme", owner=alice)
    mark_email_verified(user=alice)
    claim_domain(actor=actor_for_person(alice, acme.pk), domain="acme.example")
    (issued,) = issue_evaluation_codes(count=1)

    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.goto("/")
    assert "20 of 20" in page.locator("#quota").inner_text()

    page.goto("/evaluation/")
    page.get_by_label("Code").fill(issued.code.lower())
    with page.expect_navigation():
        page.get_by_role("button", name="Redeem").click()
    screenshot(page, "evaluation-redeemed")
    assert_accessible(page)

    page.goto("/")
    assert "50 of 50" in page.locator("#quota").inner_text()
    assert "scale" in page.locator("#quota").inner_text().lower()
