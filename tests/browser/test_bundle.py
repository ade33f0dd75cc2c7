"""A hung job's bundle dropped on the page: one diagnosis, whose result names the rank that stalled
the job and the frame it stands in, on a rank map and in the grouped stacks."""

from __future__ import annotations

import base64
import re
from typing import Any

from diagnosis.models import Diagnosis
from tests.browser.conftest import assert_accessible, screenshot, wait_for_result
from tests.diagnosis.test_bundles import DATALOADER, files_of

# Builds a DataTransfer of the files in the page, as a drop from the desktop carries them.
DATA_TRANSFER = """(files) => {
  const transfer = new DataTransfer();
  for (const [name, encoded] of files) {
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    transfer.items.add(new File([bytes], name));
  }
  return transfer;
}"""


def test_a_bundle_dropped_on_the_page_names_the_stalled_rank_and_its_frame(page: Any) -> None:
    # A real 6-rank gloo job (bench/hangruns, dev part): rank 2 blocks in its DataLoader's fetch.
    files = files_of(DATALOADER)
    page.goto("/")
    transfer = page.evaluate_handle(
        DATA_TRANSFER, [[name, base64.b64encode(data).decode()] for name, data in files]
    )
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": transfer})
    page.locator("#selection").filter(has_text="as one job's bundle").wait_for()
    assert page.evaluate("document.getElementById('id_log_file').files.length") == len(files)
    page.get_by_role("button", name="Diagnose").click()

    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "One Rank Never Reached The Collective" in page.locator("#failure").inner_text()
    assert "Rank 2 failed first" in page.locator("#initiating-rank").inner_text()
    culprit = page.locator('#rank-map li[data-state="culprit"]')
    assert culprit.count() == 1
    assert culprit.get_attribute("data-rank") == "2"
    assert page.locator('#rank-map li[data-state="waiting"]').count() == 5
    marked = page.locator("#stack-groups tr.initiating").inner_text()
    assert "rank 2" in marked
    assert "fetch_remote_sample" in marked
    assert "program.py:50" in marked
    assert "data loading" in marked
    assert "Rank 2" in page.locator("#culprits").inner_text()
    assert Diagnosis.objects.get().kind == Diagnosis.Kind.BUNDLE
    screenshot(page, "result-bundle")
    assert_accessible(page)
