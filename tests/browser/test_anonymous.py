"""A visitor pastes a log, watches it, reads the result; the fourth of the day is refused."""

from __future__ import annotations

import re
from typing import Any

from diagnosis.models import Diagnosis
from tests.browser.conftest import assert_accessible, screenshot


def test_a_visitor_diagnoses_a_sample_and_reads_the_result(page: Any) -> None:
    page.goto("/")
    assert "3 of 3" in page.locator("#quota").inner_text()
    screenshot(page, "home")
    assert_accessible(page)

    page.get_by_role("link", name="NCCL watchdog timeout on four ranks").click()
    page.wait_for_function("document.querySelector('#id_log_text').value.includes('Watchdog')")
    page.get_by_role("button", name="Diagnose").click()

    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    assert "NCCL" in page.locator("#failure").inner_text()
    assert "Rank 3 failed first" in page.locator("#initiating-rank").inner_text()
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


def test_the_result_page_follows_the_stages_live(page: Any) -> None:
    page.goto("/?sample=optimizer-state-oom")
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    diagnosis_id = page.url.split("/diagnoses/")[1].split("/")[0]

    # The pipeline ran eagerly; put the row back in the matching stage and watch the page.
    Diagnosis.objects.filter(id=diagnosis_id).update(status="matching", progress=40)
    page.reload()
    page.locator("#stage-label", has_text="Matching the log against the catalogue").wait_for()
    assert page.locator("#progress-bar").get_attribute("value") == "40"
    assert page.locator("#stages li[aria-current=step]").inner_text().startswith("Matching")
    screenshot(page, "progress")
    assert_accessible(page)

    Diagnosis.objects.filter(id=diagnosis_id).update(status="remediating", progress=80)
    page.locator("#stage-label", has_text="Looking up the fix").wait_for()
    Diagnosis.objects.filter(id=diagnosis_id).update(status="done", progress=100)
    page.locator("#failure").wait_for()
    assert "Optimizer" in page.locator("#failure").inner_text()

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
    assert "worker.log" in page.locator("main").inner_text()
    assert page.locator("#failure").inner_text()


def test_without_javascript_a_sample_is_diagnosed_by_the_plain_form(
    browser: Any, site: str
) -> None:
    context = browser.new_context(base_url=site, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto("/")
        page.get_by_role("link", name="DataLoader worker killed: no shared memory").click()
        assert "sample=dataloader-shm" in page.url
        assert "DataLoader worker" in page.locator("#id_log_text").input_value()
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
        assert page.locator("#failure").inner_text()
        # The copy buttons need the script: without it they stay hidden.
        assert not page.locator("button.copy").first.is_visible()
    finally:
        context.close()
