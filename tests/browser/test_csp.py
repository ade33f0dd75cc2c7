"""The pages work under their Content-Security-Policy: Chromium reports no violation on any main
page, signed out and in, through a diagnosis and its result, and the API docs (Redoc) render
without loading anything from another site."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from accounts.services import create_organization
from tests.browser.conftest import DESKTOP, wait_for_result, wait_for_sample
from tests.browser.test_accounts import sign_in

# Every `securitypolicyviolation` event of every document, reported on the console (an init
# script runs in each new document, outside the policy).
RECORD_VIOLATIONS = """
  document.addEventListener("securitypolicyviolation", (event) => {
    console.error("CSP violation: " + event.violatedDirective + " " + event.blockedURI
                  + " at " + event.sourceFile + ":" + event.lineNumber);
  });
"""


class Watched:
    """A page and what the browser reported about it: policy violations (the event, and the
    console's own report of each refusal) and requests to another origin."""

    def __init__(self, page: Any, site: str) -> None:
        self.page = page
        self.violations: list[str] = []
        self.foreign: list[str] = []
        page.on("console", self._console)
        page.on("request", lambda request: self._request(request.url, site))

    def _console(self, message: Any) -> None:
        text = message.text
        if "CSP violation" in text or "Content Security Policy" in text:
            self.violations.append(text)

    def _request(self, url: str, site: str) -> None:
        if not url.startswith((site, "data:", "blob:")):
            self.foreign.append(url)

    def visit(self, path: str) -> None:
        response = self.page.goto(path)
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy, (path, policy)
        assert "'unsafe-inline'" not in policy.split("style-src")[0], policy  # never for scripts


@pytest.fixture
def watched(browser: Any, site: str) -> Iterator[Watched]:
    context = browser.new_context(base_url=site, viewport=DESKTOP)
    context.set_default_timeout(15_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    watch = Watched(page, site)
    yield watch
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not watch.violations, f"Content-Security-Policy violations: {watch.violations}"
    assert not watch.foreign, f"requests to another site: {watch.foreign}"


def test_the_public_pages_and_a_diagnosis_keep_to_the_policy(watched: Watched) -> None:
    page = watched.page
    for path in (
        "/encyclopedia/",
        "/encyclopedia/optimizer-state-oom/",
        "/encyclopedia/search/?q=CUDA+out+of+memory",
        "/accounts/login/",
        "/accounts/signup/",
    ):
        watched.visit(path)
    # The home page's scripts at work: a sample loaded into the box, then the result page's.
    watched.visit("/")
    page.get_by_role("link", name="CUDA out of memory at the first optimizer step").click()
    wait_for_sample(page, "CUDA")
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)


def test_the_signed_in_pages_keep_to_the_policy(watched: Watched, alice: Any) -> None:
    create_organization(name="Acme", owner=alice)
    sign_in(watched.page, "alice@acme.example", "pw-alice-123")
    for path in ("/", "/diagnoses/", "/settings/", "/evaluation/"):
        watched.visit(path)
        # The style sheet applied: the page is not unstyled (style-src 'self').
        margin = watched.page.evaluate("getComputedStyle(document.body).margin")
        assert margin == "0px", path


def test_the_api_docs_render_under_the_policy_from_this_site_alone(watched: Watched) -> None:
    watched.visit("/api/v1/docs")
    page = watched.page
    # Redoc has fetched the schema and drawn the operations.
    page.get_by_text("Submit a log, in one of three forms", exact=False).first.wait_for(
        timeout=60_000
    )
    assert page.locator("h1", has_text="rootcause API").count() >= 1
