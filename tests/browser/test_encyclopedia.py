"""An encyclopedia entry diagnoses a pasted sample; search finds entries by text and keywords."""

from __future__ import annotations

import re
from typing import Any

from tests.browser.conftest import assert_accessible, screenshot, wait_for_result, wait_for_sample


def test_an_entry_pages_paste_box_diagnoses_a_sample(page: Any) -> None:
    page.goto("/encyclopedia/optimizer-state-oom/")
    aside = page.locator("aside.diagnose-here")
    assert "the real root cause for YOUR run" in aside.inner_text()
    assert "3 of 3" in page.locator("#quota").inner_text()
    assert "14-day Scale evaluation" in page.locator("#evaluation").inner_text()
    assert "50 diagnoses a day" in page.locator("#evaluation").inner_text()
    local = page.locator("pre").filter(has_text="--offline").first.inner_text()
    assert "rootcause diagnose train.log --offline" in local
    related = page.locator("#related li")
    if related.count():
        assert "severity" in related.first.inner_text().lower()
    screenshot(page, "encyclopedia-entry")
    assert_accessible(page)

    # The sample fills the box on this page (no navigation), and the form diagnoses it.
    aside.get_by_role("link", name="CUDA out of memory at the first optimizer step").click()
    wait_for_sample(page, "adamw")
    assert "/encyclopedia/" in page.url
    aside.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "Optimizer State Memory Explosion" in page.locator("#failure").inner_text()


def test_search_finds_entries_by_keywords_and_by_error_text_in_any_case(page: Any) -> None:
    page.goto("/encyclopedia/search/")
    for query, slug in (
        ("NCCL timeout", "nccl-timeout"),
        ("optimizer", "optimizer-state-oom"),
        (
            "TORCH.OUTOFMEMORYERROR: CUDA OUT OF MEMORY. TRIED TO ALLOCATE 2.00 GIB",
            "activation-oom",
        ),
    ):
        page.get_by_label("Error text").fill(query)
        with page.expect_navigation():
            page.get_by_role("button", name="Search").click()
        results = page.locator(f"a[href='/encyclopedia/{slug}/']")
        assert results.count() >= 1, query
        assert page.locator("main table tbody tr").count() >= 1, query
        # The query's line is shown beside what it matched in the entry.
        matched = page.locator("section", has=results.first).locator("table")
        assert query in matched.inner_text(), query
        assert "Matched in the entry" in matched.inner_text()
    screenshot(page, "encyclopedia-search")
    assert_accessible(page)
