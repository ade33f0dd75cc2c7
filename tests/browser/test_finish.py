"""The pages' finish in a browser, at 1280 and 390 px: no sideways scroll where a fix has long
inline code, a history table that shows its Delete column and keeps dates on one line, Delete
that asks first and can be undone, one id per element, the header's History link and mark, a
styled 403, the "Was this right?" form and account pages passing axe, and API docs that load
nothing from elsewhere."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from accounts.models import Membership
from accounts.services import add_member, create_organization
from diagnosis.models import Diagnosis
from rootcause.cli import diagnose_path
from rootcause.engine import get_engine
from rootcause.result import Remediation, as_json
from tests.browser.conftest import DESKTOP, PHONE, assert_accessible, screenshot
from tests.browser.test_accounts import sign_in
from tests.browser.test_scale_pages import _scale_organisation

SAMPLE = (
    Path(__file__).resolve().parents[2]
    / "diagnosis/static/diagnosis/samples/optimizer-state-oom.log"
)
LONG_CODE = (
    "Relaunch with `torchrun --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint"
    " <HOST_1>:29400 train.py --per-device-train-batch-size 4 --gradient-accumulation-steps 8"
    " --gradient-checkpointing --optim adamw_torch_fused`, then `export"
    " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512` before it."
)
DUPLICATE_IDS = """(() => { const seen = {}, twice = [];
  for (const e of document.querySelectorAll('[id]')) { if (seen[e.id]) twice.push(e.id); seen[e.id] = 1; }
  return twice; })()"""


def _done(organization: Any, *, filename: str, job: str = "") -> Diagnosis:
    """A finished diagnosis of the shipped sample, its fix given a step of long inline code."""
    result = diagnose_path(str(SAMPLE), get_engine())
    fix = result.remediation
    assert isinstance(fix, Remediation)
    result = replace(result, remediation=replace(fix, steps=[LONG_CODE, *fix.steps]))
    return Diagnosis.objects.create(
        organization=organization,
        source="web",
        size_bytes=SAMPLE.stat().st_size,
        filename=filename,
        job=job,
        status="done",
        outcome="diagnosed",
        failure_slug=result.failure.slug if result.failure else "",
        result=as_json(result),
    )


def _fits(page: Any, viewport: dict[str, int]) -> None:
    page.set_viewport_size(viewport)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"{page.url} is {width} px wide at {viewport['width']}"


def _check(page: Any, name: str) -> None:
    """Both widths fit (screenshot() checks the phone), one id per element, axe clean."""
    screenshot(page, name)
    _fits(page, DESKTOP)
    assert page.evaluate(DUPLICATE_IDS) == [], f"{name}: ids used twice"
    assert_accessible(page)


def test_a_result_with_long_inline_code_fits_a_phone_and_asks_was_this_right(
    page: Any, alice: Any
) -> None:
    acme = create_organization(name="Acme", owner=alice)
    diagnosis = _done(acme, filename="train.log")
    sign_in(page, "alice@acme.example", "pw-alice-123")

    page.goto(f"/diagnoses/{diagnosis.id}/")
    assert page.locator("#fix code").first.is_visible()
    _check(page, "result-long-code")

    form = page.locator("#feedback-form")
    form.get_by_label("Wrong").check()
    form.get_by_label("The right class is").select_option("activation-oom")
    with page.expect_navigation():
        form.get_by_role("button", name="Send").click()
    assert "the right class is activation-oom" in page.locator("#feedback-given").inner_text()
    _check(page, "result-feedback-given")


def test_the_history_shows_delete_dates_on_one_line_and_undoes_a_deletion(
    page: Any, alice: Any
) -> None:
    acme = create_organization(name="Acme", owner=alice)
    for n in range(3):
        _done(
            acme,
            filename=f"pretrain-llama-70b-stage-{n}-node-07-rank-all-2026-11-30.log",
            job=f"nightly-pretrain-llama-70b-fsdp-8x8-h100-run-{n}",
        )
    sign_in(page, "alice@acme.example", "pw-alice-123")
    page.get_by_role("link", name="History").click()
    assert urlsplit(page.url).path == "/diagnoses/"

    scroller = page.locator(".table-scroll").first
    assert scroller.evaluate("e => e.scrollWidth <= e.clientWidth"), "the table scrolls sideways"
    delete = page.locator("a.delete").first
    box, view = delete.bounding_box(), page.viewport_size
    assert box is not None
    assert box["x"] + box["width"] <= view["width"]
    cell = page.locator("td.when").first
    line = cell.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
    assert cell.evaluate("e => e.querySelector('a').getBoundingClientRect().height") < 1.5 * line
    _check(page, "history-wide")

    with page.expect_navigation():
        delete.click()
    assert page.locator("#confirm-delete").is_visible()
    _check(page, "delete-confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Delete").click()
    assert Diagnosis.objects.count() == 2
    with page.expect_navigation():
        page.locator("#undo").get_by_role("button", name="Undo").click()
    assert Diagnosis.objects.count() == 3
    assert "The diagnosis is back." in page.content()


def test_settings_pages_have_one_id_per_element_and_a_sub_navigation(page: Any, alice: Any) -> None:
    _scale_organisation(alice)
    sign_in(page, "alice@acme.example", "pw-alice-123")
    for path in ("/settings/", "/settings/alerts/", "/settings/account/"):
        page.goto(path)
        assert page.locator("nav.subnav [aria-current=page]").count() == 1, path
        _check(page, path.strip("/").replace("/", "-"))
    page.goto("/settings/organization/delete/")
    _check(page, "settings-organization-delete")


def test_buttons_are_styled_and_a_403_looks_like_the_site(page: Any, alice: Any, bob: Any) -> None:
    acme = create_organization(name="Acme", owner=alice)
    add_member(organization=acme, user=bob)
    Membership.objects.filter(user=bob).update(role="member")
    sign_in(page, "bob@acme.example", "pw-bob-123")

    response = page.goto("/settings/organization/delete/")
    assert response is not None
    assert response.status == 403
    assert page.locator("#forbidden-reason").is_visible()
    _check(page, "forbidden")
    page.goto("/settings/")
    grey = page.evaluate(
        """[...document.querySelectorAll('button')].filter(b => {
             const s = getComputedStyle(b);
             return s.backgroundColor === 'rgb(239, 239, 239)' || s.borderStyle === 'outset';
           }).map(b => b.textContent.trim())"""
    )
    assert grey == []


def test_the_favicon_and_the_api_docs_load_only_from_the_service(page: Any, site: str) -> None:
    # Every request the page makes but those its Content-Security-Policy stops in the browser
    # (Redoc's bundle asks its maker's CDN for a logo): this machine has no network, so a
    # request that left would fail too, and only the reason tells them apart.
    requested: list[str] = []
    blocked: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    def failed(request: Any) -> None:
        if "BLOCKED_BY_CSP" in (request.failure or ""):
            blocked.append(request.url)

    page.on("requestfailed", failed)

    page.goto("/api/v1/docs")
    page.wait_for_load_state("networkidle")
    page.goto("/")
    icon = page.request.get("/favicon.ico")

    assert icon.status == 200
    own = urlsplit(site).netloc
    elsewhere = [
        u
        for u in requested
        if urlsplit(u).scheme in ("http", "https")
        and urlsplit(u).netloc != own
        and u not in blocked
    ]
    assert elsewhere == []
    _fits(page, PHONE)
