"""A big log: the page picks out the evidence, says what it left out, and uploads only that."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from diagnosis.models import Diagnosis
from tests.browser.conftest import screenshot, wait_for_result
from tests.extraction_vectors import CLI_SIZES, python_selection

SAMPLE = (
    Path(__file__).resolve().parents[2]
    / "diagnosis/static/diagnosis/samples/nccl-timeout-rank3.log"
)

KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"


def test_a_large_file_is_reduced_to_its_evidence_before_upload(page: Any) -> None:
    healthy = "".join(
        f"0: [2024-11-20 04:{n // 600 % 60:02d}:00] step {n} loss 2.2100 grad_norm 0.71 tok/s 187k\n"
        for n in range(80_000)
    )
    # A private key pasted into the log, among the last lines (which are always kept).
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n"
    log = (healthy + SAMPLE.read_text() + key).encode()
    assert len(log) > 5 << 20

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
    # In Chromium, the page keeps the lines the CLI's extraction keeps of this file.
    in_page = page.evaluate(
        """async (text) => {
          const spec = await (await fetch("/extraction.json")).json();
          return window.RootcauseExtract.select(text, spec).kept;
        }""",
        log.decode(),
    )
    kept, taught_only = python_selection(log.decode(), CLI_SIZES)
    assert in_page == sorted(set(kept) - set(taught_only))
    assert f"{len(in_page)} of " in text

    # What the form will upload (Playwright's request records leave out a multipart's file): the
    # kept lines in place, the others empty, the key's lines as the service's masker leaves them.
    sent = page.evaluate("document.getElementById('id_log_file').files[0].text()")
    lines, sent_lines = log.decode().splitlines(), sent.splitlines()
    assert len(sent_lines) == len(lines)
    kept_with_text = {i for i in in_page if lines[i]} - {len(lines) - 2, len(lines) - 1}
    assert {i for i, line in enumerate(sent_lines) if line} == kept_with_text
    assert {len(lines) - 3, len(lines) - 2} <= set(in_page)  # the key's lines were kept
    assert sent_lines[-3] == "<PRIVATE_KEY>"
    assert KEY_BODY not in sent
    assert len(sent.encode()) < len(log) // 4

    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "NCCL" in page.locator("#failure").inner_text()
    said = page.locator("#initiating-rank").inner_text()
    assert "Rank 3" in said
    assert "failed first" in said
    # The lines the result cites are those of the whole file.
    first_evidence = int(page.locator("#evidence tbody tr td.num").first.inner_text())
    assert first_evidence > 70_000  # the reduced file has a few hundred lines
    # The server received that, not the file.
    diagnosis_id = page.url.split("/diagnoses/")[1].split("/")[0]
    assert Diagnosis.objects.get(id=diagnosis_id).size_bytes == len(sent.encode())


def test_a_file_above_the_server_limit_is_never_uploaded_whole(page: Any, settings: Any) -> None:
    settings.ROOTCAUSE_MAX_LOG_BYTES = 256 * 1024  # the live server runs in this process
    posts: list[int] = []
    page.on(
        "request",
        lambda r: posts.append(len(r.post_data_buffer or b"")) if r.method == "POST" else None,
    )
    page.goto("/")
    # Compressed, it cannot be reduced in the page: it is refused before any upload.
    page.locator("#id_log_file").set_input_files(
        files=[{"name": "train.log.gz", "mimeType": "application/gzip", "buffer": b"x" * 300_000}]
    )
    assert "above the limit of 256.0 KB for a log" in page.locator("#selection").inner_text()
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_timeout(300)
    assert posts == []
    assert page.url.endswith("/")

    # Plain text above the limit (and below the usual threshold) is reduced to its evidence.
    healthy = "".join(f"[04:00:{n % 60:02d}] step {n} loss 2.21 tok/s 187k\n" for n in range(9000))
    log = (healthy + SAMPLE.read_text()).encode()
    assert len(log) > 256 * 1024
    page.locator("#id_log_file").set_input_files(
        files=[{"name": "train.log", "mimeType": "text/plain", "buffer": log}]
    )
    page.locator("#selection").filter(has_text="lines will be sent").wait_for()
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "NCCL" in page.locator("#failure").inner_text()
    diagnosis_id = page.url.split("/diagnoses/")[1].split("/")[0]
    assert Diagnosis.objects.get(id=diagnosis_id).size_bytes < 256 * 1024
