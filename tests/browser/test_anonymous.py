"""A visitor pastes a log, watches it, reads the result; the fourth of the day is refused."""

from __future__ import annotations

import json
import re
from typing import Any

from diagnosis.models import Diagnosis
from tests.browser.conftest import assert_accessible, screenshot, wait_for_result, wait_for_sample


def test_a_visitor_diagnoses_a_sample_and_reads_the_result(page: Any) -> None:
    page.goto("/")
    assert "3 of 3" in page.locator("#quota").inner_text()
    screenshot(page, "home")
    assert_accessible(page)

    page.get_by_role("link", name="NCCL watchdog timeout on four ranks").click()
    wait_for_sample(page, "Watchdog")
    page.get_by_role("button", name="Diagnose").click()

    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "NCCL" in page.locator("#failure").inner_text()
    said = page.locator("#initiating-rank").inner_text()
    assert "Rank 3" in said
    assert "failed first" in said
    ranks = page.locator("#ranks tbody tr")
    assert ranks.count() >= 2
    assert "collateral" in page.locator("#ranks").inner_text()
    assert page.locator("#evidence tbody tr").count() >= 1
    # A visitor gets the root cause, and the fix behind a free account.
    assert page.locator("#sign-up").is_visible()
    assert page.locator("#fix-command").count() == 0
    assert "?key=" in page.locator("#permalink").inner_text()
    screenshot(page, "result-anonymous")
    assert_accessible(page)


def test_the_result_page_follows_the_stages_live(page: Any, worker: Any) -> None:
    # Every stage label the page shows, kept across the reload that brings the result.
    page.add_init_script(
        """document.addEventListener("DOMContentLoaded", () => {
          const label = document.getElementById("stage-label");
          if (!label) return;
          const note = () => {
            const seen = JSON.parse(sessionStorage.getItem("stages") || "[]");
            if (seen[seen.length - 1] !== label.textContent) seen.push(label.textContent);
            sessionStorage.setItem("stages", JSON.stringify(seen));
          };
          note();
          new MutationObserver(note).observe(label, {childList: true, characterData: true,
                                                     subtree: true});
        })"""
    )
    page.goto("/?sample=optimizer-state-oom")
    # The worker is held still while the page is looked at: the diagnosis waits in Redis.
    with worker.paused():
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
        page.locator("#stage-label", has_text="Waiting for a worker").wait_for()
        assert page.locator("#progress-bar").is_visible()
        assert page.locator("#failure").count() == 0
        screenshot(page, "progress")
        assert_accessible(page)
    diagnosis_id = page.url.split("/diagnoses/")[1].split("/")[0]

    # Let go, the worker runs the stages; the page shows the result without being reloaded here.
    wait_for_result(page)
    assert "Optimizer" in page.locator("#failure").inner_text()
    seen = json.loads(page.evaluate("sessionStorage.getItem('stages')"))
    assert seen[0] == "Waiting for a worker", seen
    assert Diagnosis.objects.get(id=diagnosis_id).status == "done"
    # The stages the page caught between (how many depends on the poll's timing).
    print("stage labels the page showed:", seen)

    # A failure on our side is said in words, with what to do next.
    Diagnosis.objects.filter(id=diagnosis_id).update(status="failed", failure_reason="Timeout")
    page.reload()
    failed = page.get_by_role("alert")
    assert "failed on our side" in failed.inner_text()
    assert "Try again" in failed.inner_text()
    assert "not counted" in failed.inner_text()


def test_the_fourth_diagnosis_of_the_day_is_refused_with_the_reset_time(page: Any) -> None:
    for remaining in (3, 2, 1):
        page.goto("/?sample=dataloader-shm")
        assert f"{remaining} of 3" in page.locator("#quota").inner_text()
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url(re.compile(r"/diagnoses/"))

    page.goto("/?sample=dataloader-shm")
    assert "0 of 3" in page.locator("#quota").inner_text()
    page.get_by_role("button", name="Diagnose").click()
    alert = page.get_by_role("alert")
    text = alert.inner_text()
    assert "resets at" in text, text
    assert "UTC" in text, text
    assert "Sign up" in text, text
    screenshot(page, "home-over-quota")


def test_a_file_dropped_on_the_zone_is_diagnosed(page: Any) -> None:
    page.goto("/")
    page.evaluate(
        """async () => {
          const text = await (await fetch("/static/diagnosis/samples/dataloader-shm.log")).text();
          const transfer = new DataTransfer();
          transfer.items.add(new File([text], "worker.log", {type: "text/plain"}));
          const zone = document.getElementById("dropzone");
          zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: transfer, bubbles: true}));
          zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
        }"""
    )
    assert "worker.log" in page.locator("#selection").inner_text()
    assert page.evaluate("document.getElementById('id_log_file').files[0].name") == "worker.log"
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "worker.log" in page.locator("main").inner_text()
    assert page.locator("#failure").inner_text()


def test_without_javascript_a_sample_is_diagnosed_by_the_plain_form(
    browser: Any, site: str, worker: Any
) -> None:
    context = browser.new_context(base_url=site, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto("/")
        page.get_by_role("link", name="DataLoader worker killed: no shared memory").click()
        assert "sample=dataloader-shm" in page.url
        assert "DataLoader worker" in page.locator("#id_log_text").input_value()
        with worker.paused():
            page.get_by_role("button", name="Diagnose").click()
            page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
            assert "Waiting for a worker" in page.locator("#stage-label").inner_text()
            # The page asks to be refreshed every two seconds. Playwright turns scripts off
            # without telling the HTML parser, which then ignores <noscript>: the test does the
            # refreshing the browser would do.
            html = page.request.get(page.url).text()
            assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in html
        for _ in range(90):
            if page.locator("#failure").count():
                break
            page.wait_for_timeout(1000)
            page.reload()
        assert page.locator("#failure").inner_text()
        # The copy buttons need the script: without it they stay hidden.
        assert not page.locator("button.copy").first.is_visible()
    finally:
        context.close()
