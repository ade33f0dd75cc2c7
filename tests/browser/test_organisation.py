"""The account and organisation pages a person reaches by e-mail or from settings: reset a
forgotten password, invite a colleague who accepts, claim a workplace domain, add a masking
term, request an evaluation code. Each page passes axe and fits a 390-pixel screen."""

from __future__ import annotations

import re
from typing import Any

from django.core import mail

from accounts.actors import actor_for_person
from accounts.models import Membership, Organization
from accounts.services import claim_domain, create_organization, mark_email_verified
from billing_tiers.models import EvaluationRequest
from tests.browser.conftest import assert_accessible, screenshot
from tests.browser.test_accounts import sign_in


def _link(path: str, to: str) -> str:
    """The path of the link of `path` in the last message sent to `to`."""
    (message,) = [m for m in mail.outbox if to in m.to][-1:]
    found = re.search(rf"https?://[^/\s]+({re.escape(path)}\S+)", str(message.body))
    assert found, message.body
    return found.group(1)


def test_a_forgotten_password_is_reset_by_the_e_mailed_link(page: Any, alice: Any) -> None:
    mail.outbox.clear()
    page.goto("/accounts/login/")
    page.get_by_role("link", name="Forgotten your password?").click()
    page.get_by_label("E-mail").or_(page.get_by_label("Email")).first.fill("alice@acme.example")
    screenshot(page, "password-reset")
    assert_accessible(page)
    with page.expect_navigation():
        page.get_by_role("button", name="Send the link").click()
    assert "/accounts/password_reset/done/" in page.url
    assert_accessible(page)

    page.goto(_link("/accounts/reset/", "alice@acme.example"))
    page.locator("h1", has_text="Choose a new password").wait_for()
    page.get_by_label("New password", exact=True).fill("a new pass phrase 77")
    # The keyboard goes from the password to its confirmation to the button.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "new_password2"
    page.keyboard.type("a new pass phrase 77")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Set my password"
    screenshot(page, "password-reset-confirm")
    assert_accessible(page)
    with page.expect_navigation():
        page.get_by_role("button", name="Set my password").click()
    assert "/accounts/reset/done/" in page.url
    assert_accessible(page)

    # The link is spent, the old password no longer works, the new one does.
    page.goto(_link("/accounts/reset/", "alice@acme.example"))
    assert "not valid" in page.locator("main").inner_text()
    sign_in(page, "alice@acme.example", "pw-alice-123")
    assert "/accounts/login/" in page.url
    sign_in(page, "alice@acme.example", "a new pass phrase 77")
    assert "/accounts/login/" not in page.url
    alice.refresh_from_db()
    assert alice.check_password("a new pass phrase 77")


def test_an_invitation_is_sent_from_settings_and_accepted(
    page: Any, browser: Any, site: str, alice: Any, charlie: Any
) -> None:
    acme = create_organization(name="Acme", owner=alice)
    mail.outbox.clear()
    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.goto("/settings/#invitations")
    form = page.locator("form[action='/settings/invitations/']").first
    form.get_by_label("E-mail").fill("charlie@umbrella.example")
    with page.expect_navigation():
        form.get_by_role("button", name="Invite").click()
    assert "charlie@umbrella.example" in page.locator("#invitations ~ div table").inner_text()
    link = _link("/accounts/invitations/accept/", "charlie@umbrella.example")

    # Charlie, in a browser of his own, without JavaScript: the invitation works as plain forms.
    context = browser.new_context(base_url=site, java_script_enabled=False)
    other = context.new_page()
    try:
        other.goto(link)
        assert "Acme" in other.locator("main").inner_text()
        # Signing in from the invitation comes back to it.
        other.get_by_role("link", name="sign in", exact=True).click()
        other.get_by_label("E-mail").or_(other.get_by_label("Email")).first.fill(
            "charlie@umbrella.example"
        )
        other.get_by_label("Password").fill("pw-c-123")
        with other.expect_navigation():
            other.locator("main form button[type=submit]").click()
        assert "/accounts/invitations/accept/" in other.url
        with other.expect_navigation():
            other.get_by_role("button", name="Join Acme").click()
        assert "/settings/" in other.url
        assert "You joined Acme" in other.locator("main").inner_text()
    finally:
        context.close()
    assert Membership.objects.filter(organization=acme, user=charlie).exists()

    # Seen with scripts on, the page passes axe and fits a phone.
    page.goto(link)
    screenshot(page, "invitation")
    assert_accessible(page)


def test_an_owner_claims_a_domain_adds_a_masking_term_and_sees_the_members(
    page: Any, acme: Organization, alice: Any
) -> None:
    mark_email_verified(user=alice)
    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.goto("/settings/")
    members = page.locator("#members + div table").inner_text()
    assert "alice@acme.example" in members
    assert "bob@acme.example" in members

    page.get_by_label("Domain").fill("acme.example")
    with page.expect_navigation():
        page.get_by_role("button", name="Claim").click()
    domains = page.locator("#domains ~ div table").first.inner_text().lower()
    assert "acme.example" in domains
    # Alice's verified address is at the domain: it is verified at once.
    assert "verified" in domains
    assert "not verified" not in domains

    rules = page.locator("form[action$='#masking-rules']")
    rules.get_by_label("Term or pattern").fill("project-falcon")
    rules.get_by_label("Label").fill("CODENAME")
    with page.expect_navigation():
        rules.get_by_role("button", name="Add").click()
    table = page.locator("#masking-rules ~ div table").first.inner_text()
    assert "project-falcon" in table
    assert "CODENAME" in table
    screenshot(page, "settings-organisation")
    assert_accessible(page)


def test_a_workplace_owner_requests_an_evaluation_code(page: Any, alice: Any) -> None:
    acme = create_organization(name="Acme", owner=alice)
    mark_email_verified(user=alice)
    claim_domain(actor=actor_for_person(alice, acme.pk), domain="acme.example")
    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.goto("/evaluation/")
    page.get_by_label("What do you train?").fill("7B models on 4 nodes of 8 H100, PyTorch FSDP")
    page.get_by_label("Team size").fill("6")
    with page.expect_navigation():
        page.get_by_role("button", name=re.compile("request", re.I)).click()
    assert "Request sent" in page.locator("main").inner_text()
    assert EvaluationRequest.objects.filter(organization=acme).count() == 1
    screenshot(page, "evaluation-requested")
    assert_accessible(page)
