"""axe-core finds nothing on the account pages and the encyclopedia's index; a keyboard reaches
the paste box in a sensible order."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.services import create_organization
from tests.browser.conftest import assert_accessible, screenshot
from tests.browser.test_accounts import sign_in


@pytest.mark.parametrize(
    "path", ["/accounts/signup/", "/accounts/login/", "/encyclopedia/", "/encyclopedia/search/"]
)
def test_public_pages_pass_axe(page: Any, path: str) -> None:
    page.goto(path)
    screenshot(page, path.strip("/").replace("/", "-"))
    assert_accessible(page)


def test_settings_and_evaluation_pages_pass_axe(page: Any, alice: Any) -> None:
    create_organization(name="Acme", owner=alice)
    sign_in(page, "alice@acme.example", "pw-alice-123")
    for path in ("/settings/", "/evaluation/"):
        page.goto(path)
        screenshot(page, path.strip("/"))
        assert_accessible(page)


def test_the_keyboard_reaches_the_paste_box_then_the_file_then_diagnose(page: Any) -> None:
    page.goto("/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
    page.keyboard.press("Enter")
    order = []
    for _ in range(40):
        page.keyboard.press("Tab")
        order.append(
            page.evaluate("document.activeElement.id || document.activeElement.textContent")
        )
        if order[-1] == "Diagnose":
            break
    assert order.index("id_log_text") < order.index("id_log_file") < order.index("Diagnose")
