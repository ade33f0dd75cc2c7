"""Signed-in people: sign up, verify, diagnose, find it in the history; create an API token."""

from __future__ import annotations

import re
from typing import Any

from django.core import mail

from accounts.models import Organization
from accounts.services import create_organization
from tests.browser.conftest import assert_accessible, screenshot, wait_for_result, wait_for_sample


def sign_in(page: Any, email: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("E-mail").or_(page.get_by_label("Email")).first.fill(email)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()


def test_sign_up_verify_diagnose_and_find_the_fix_in_the_history(page: Any) -> None:
    mail.outbox.clear()
    page.goto("/accounts/signup/")
    page.locator("input[name=email]").fill("dana@lab.example")
    page.locator("input[name=password1]").fill("a long pass phrase 42")
    page.locator("input[name=password2]").fill("a long pass phrase 42")
    with page.expect_navigation():
        page.get_by_role("button", name="Create my account").click()

    (message,) = [m for m in mail.outbox if "dana@lab.example" in m.to]
    link = re.search(r"https?://\S+/accounts/verify/\S+", str(message.body))
    assert link, message.body
    page.goto(link.group(0).replace(link.group(0).split("/accounts/")[0], ""))
    page.goto("/")
    assert "10 of 10" in page.locator("#quota").inner_text()

    page.get_by_role("link", name="CUDA out of memory at the first optimizer step").click()
    wait_for_sample(page, "adamw")
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/$"))
    wait_for_result(page)
    assert "Optimizer State Memory Explosion" in page.locator("#failure").inner_text()
    assert page.locator("#fix-command").inner_text().strip()
    assert page.locator("#verify-command").inner_text().strip()
    assert page.get_by_role("button", name="Copy the fix command").is_visible()
    screenshot(page, "result-signed-in")
    assert_accessible(page)

    page.goto("/diagnoses/")
    row = page.locator("main table tbody tr").first
    assert "optimizer-state-oom" in row.inner_text()
    screenshot(page, "history")
    assert_accessible(page)
    row.get_by_role("link").first.click()
    assert page.locator("#fix-command").is_visible()


def test_an_admin_creates_an_api_token_and_sees_it_once(page: Any, alice: Any) -> None:
    create_organization(name="Acme", owner=alice)
    assert Organization.objects.count() >= 1
    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.goto("/settings/#tokens")
    form = page.locator("form[action$='#tokens']")
    form.locator("input[name=name]").fill("ci")
    with page.expect_navigation():
        form.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token-secret").inner_text().strip()
    assert re.fullmatch(r"rc_live_[0-9A-Za-z]{36}", secret), secret
    screenshot(page, "settings-token-created")

    page.goto("/settings/")
    assert page.locator("#new-token-secret").count() == 0
    assert secret not in page.content()
    assert secret[:12] in page.content() or "rc_live_" in page.content()
