"""The Scale pages in a browser: the follow-up question box under a result, the failure classes
on the history page and the alerts page (a webhook's secret shown once), each passing axe."""

from __future__ import annotations

import re
from typing import Any

from accounts.actors import actor_for_person
from accounts.services import claim_domain, create_organization, mark_email_verified
from billing_tiers.services import issue_evaluation_codes, redeem_evaluation_code
from tests.browser.conftest import assert_accessible, screenshot, wait_for_result, wait_for_sample
from tests.browser.test_accounts import sign_in


def _scale_organisation(alice: Any) -> Any:
    acme = create_organization(name="Acme", owner=alice)
    mark_email_verified(user=alice)
    claim_domain(actor=actor_for_person(alice, acme.pk), domain="acme.example")
    code = issue_evaluation_codes(count=1)[0].code
    redeem_evaluation_code(actor=actor_for_person(alice, acme.pk), code=code)
    return acme


def test_a_scale_member_asks_a_question_reads_recurrence_and_adds_a_webhook(
    page: Any, alice: Any
) -> None:
    _scale_organisation(alice)
    sign_in(page, "alice@acme.example", "pw-alice-123")

    page.goto("/")
    page.get_by_role("link", name="CUDA out of memory at the first optimizer step").click()
    wait_for_sample(page, "adamw")
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/$"))
    wait_for_result(page)
    assert "Seen 1 time this week" in page.locator("#recurrence").inner_text()

    page.get_by_label("Ask about this failure").fill("How do I verify the fix worked?")
    with page.expect_navigation():
        page.get_by_role("button", name="Ask").click()
    thread = page.locator("#questions article")
    assert "How do I verify the fix worked?" in thread.inner_text()
    quoted = thread.locator("a[href^='/encyclopedia/']")
    assert quoted.count() >= 1
    screenshot(page, "result-with-question")
    assert_accessible(page)

    page.goto("/diagnoses/")
    row = page.locator("#recurrence tr[data-class='optimizer-state-oom']")
    assert row.count() == 1
    screenshot(page, "history-with-recurrence")
    assert_accessible(page)

    page.goto("/settings/alerts/")
    form = page.locator("#webhook-form")
    form.get_by_label("Endpoint URL").fill("https://hooks.acme.example/rootcause")
    form.get_by_label("Payload").select_option("slack")
    with page.expect_navigation():
        form.get_by_role("button", name="Add the webhook").click()
    secret = page.locator("#secret").inner_text().strip()
    assert secret.startswith("whsec_")
    screenshot(page, "alerts-webhook-created")
    assert_accessible(page)

    page.goto("/settings/alerts/")
    assert page.locator("#secret").count() == 0
    assert secret not in page.content()
    assert "https://hooks.acme.example/rootcause" in page.locator("#webhook-list").inner_text()
