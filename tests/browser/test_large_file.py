"""A big log: the page picks out the evidence, says what it left out, and uploads only that."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.browser.conftest import screenshot

SAMPLE = (
    Path(__file__).resolve().parents[2]
    / "diagnosis/static/diagnosis/samples/nccl-timeout-rank3.log"
)


def test_a_large_file_is_reduced_to_its_evidence_before_upload(page: Any) -> None:
    healthy = "".join(
        f"0: [2024-11-20 04:{n // 600 % 60:02d}:00] step {n} loss 2.2100 grad_norm 0.71 tok/s 187k\n"
        for n in range(80_000)
    )
    log = (healthy + SAMPLE.read_text()).encode()
    assert len(log) > 5 << 20
    bodies: list[int] = []
    page.on(
        "request",
        lambda r: bodies.append(len(r.post_data_buffer or b"")) if r.method == "POST" else None,
    )

    page.goto("/")
    page.locator("#id_log_file").set_input_files(
        files=[{"name": "train.log", "mimeType": "text/plain", "buffer": log}]
    )
    note = page.locator("#selection")
    note.filter(has_text="lines will be sent").wait_for()
    text = note.inner_text()
    assert "lines were left out" in text
    assert page.locator("#evidence-preview summary").inner_text() == "What will be sent"
    screenshot(page, "home-large-file")

    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    assert "NCCL" in page.locator("#failure").inner_text()
    assert "Rank 3 failed first" in page.locator("#initiating-rank").inner_text()
    # The lines the result cites are those of the whole file.
    first_evidence = int(page.locator("#evidence tbody tr td.num").first.inner_text())
    assert first_evidence > 80_000
    # Only the evidence went up: empty lines for the rest, far below the file's size.
    assert bodies
    assert max(bodies) < len(log) // 4, (max(bodies), len(log))
