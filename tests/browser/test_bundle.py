"""A hung job's bundle dropped on the page: one diagnosis, whose result names the rank that stalled
the job and the frame it stands in, on a rank map and in the grouped stacks."""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path
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


# A drop from the desktop, through Chromium's own input pipeline (CDP Input.dispatchDragEvent):
# the paths are real files and folders, so the page meets a folder as a DirectoryEntry, exactly
# as when a person drags one from a file manager.
def drop_paths(page: Any, *paths: Path) -> None:
    box = page.locator("#dropzone").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp = page.context.new_cdp_session(page)
    data = {"items": [], "files": [str(p) for p in paths], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        cdp.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
    cdp.detach()


def job_folder(root: Path) -> Path:
    """The real 6-rank bundle laid out as a folder would be: the logs at its top, the py-spy
    stacks in a sub-folder (the walk goes down into it)."""
    folder = root / "job"
    (folder / "stacks").mkdir(parents=True)
    for name, data in files_of(DATALOADER):
        (folder / ("stacks/" + name if name.startswith("pyspy") else name)).write_bytes(data)
    return folder


def selection(page: Any, text: str) -> str:
    note = page.locator("#selection")
    note.filter(has_text=text).wait_for()
    return str(note.inner_text())


def sent_names(page: Any) -> list[str]:
    return list(page.evaluate("[...document.getElementById('id_log_file').files].map(f => f.name)"))


def test_a_folder_dropped_on_the_page_is_walked_and_diagnosed_as_the_jobs_bundle(
    page: Any, tmp_path: Path
) -> None:
    folder = job_folder(tmp_path)
    page.goto("/")
    drop_paths(page, folder)
    said = selection(page, "as one job's bundle")
    assert said.startswith("A bundle of 13 files from the folder job (")
    names = sent_names(page)
    assert len(names) == 13
    assert "job/stacks/pyspy_rank2.txt" in names
    assert "job/rank2.log" in names
    assert not any(name in ("job", "job/stacks") for name in names)  # no folder sent as a file
    screenshot(page, "home-folder-dropped")
    assert_accessible(page)
    page.get_by_role("button", name="Diagnose").click()

    page.wait_for_url(re.compile(r"/diagnoses/[0-9a-f-]+/\?key="))
    wait_for_result(page)
    assert "Rank 2 failed first" in page.locator("#initiating-rank").inner_text()
    assert page.locator('#rank-map li[data-state="culprit"]').get_attribute("data-rank") == "2"
    assert "fetch_remote_sample" in page.locator("#stack-groups tr.initiating").inner_text()
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.kind == Diagnosis.Kind.BUNDLE
    assert diagnosis.filename.startswith("13 files: ")


def test_a_folder_chosen_with_the_folder_button_is_the_same_bundle(
    page: Any, tmp_path: Path
) -> None:
    folder = job_folder(tmp_path)
    page.goto("/")
    choose = page.get_by_label("or choose a folder")
    assert choose.is_visible()  # shown by the script: Chromium offers webkitdirectory
    choose.set_input_files(folder)
    said = selection(page, "as one job's bundle")
    assert said.startswith("A bundle of 13 files from the folder job (")
    names = sent_names(page)
    assert len(names) == 13
    assert "job/stacks/pyspy_rank0.txt" in names
    # The folder input is not the form's: only log_file carries files.
    assert page.evaluate("document.getElementById('id_log_folder').name") == ""


def test_without_the_script_the_folder_button_stays_hidden(browser: Any, site: str) -> None:
    context = browser.new_context(base_url=site, java_script_enabled=False)
    page = context.new_page()
    page.goto("/")
    assert not page.get_by_label("or choose a folder").is_visible()
    assert page.locator("#id_log_file").is_visible()
    context.close()


def test_the_pre_check_names_a_log_or_a_bundle_and_the_bundle_limits(
    page: Any, settings: Any, tmp_path: Path
) -> None:
    # Small limits, read by the live server in this process: the page says and checks them.
    settings.ROOTCAUSE_MAX_LOG_BYTES = 64 * 1024
    settings.ROOTCAUSE_BUNDLE_MAX_FILES = 20
    settings.ROOTCAUSE_BUNDLE_MAX_BYTES = 48 * 1024
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto("/")
    assert (
        "A bundle: up to 20 files, 48.0 KB a file and 48.0 KB together, or one archive up to "
        "64.0 KB that expands to at most 48.0 KB."
        in page.locator("#data-note").inner_text().replace("\xa0", " ")  # filesizeformat's space
    )

    # One file is a log: said so, with a log's limit.
    log = tmp_path / "train.log.gz"
    log.write_bytes(b"x" * 70_000)
    drop_paths(page, log)
    assert "The log train.log.gz is 68.4 KB: above the limit of 64.0 KB for a log" in selection(
        page, "for a log"
    )

    # A folder's files together past the bundle's limit: a bundle of N files, the bundle's words.
    big = tmp_path / "big"
    big.mkdir()
    for rank in range(4):
        (big / f"rank{rank}.log").write_bytes(b"step 1 loss 2.0\n" * 1000)  # 16,000 bytes each
    drop_paths(page, big)
    said = selection(page, "together: above")
    assert said.startswith(
        "A bundle of 4 files from the folder big, 62.5 KB together: above the bundle limit of "
        "48.0 KB for the files together."
    )
    assert "log" not in said.replace(".log", "")  # no word of a log for a bundle

    # One file of a folder past a bundle's limit a file.
    wide = tmp_path / "wide"
    wide.mkdir()
    (wide / "rank0.log").write_bytes(b"a" * 50_000)
    (wide / "rank1.log").write_bytes(b"b" * 100)
    drop_paths(page, wide)
    assert "rank0.log is 48.8 KB, above the bundle limit of 48.0 KB a file" in selection(
        page, "rank0.log is"
    )

    # More files than a bundle holds: the walk stops past the limit and says so.
    many = tmp_path / "many"
    (many / "deep").mkdir(parents=True)
    for n in range(30):
        (many / "deep" / f"rank{n}.log").write_text("x\n")
    drop_paths(page, many)
    assert selection(page, "More than").startswith(
        "More than 20 files in the folder many: a bundle holds at most 20 files."
    )

    # A gzip archive whose trailer declares more than an archive of its size may expand to.
    bomb = tmp_path / "ranks.tar.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (4 << 20)))  # 4 MiB of zeros in about 4 KB
    drop_paths(page, bomb)
    assert "The archive ranks.tar.gz (" in selection(page, "expands to 4.0 MB")
    assert "above the 48.0 KB an archive of its size may expand to" in selection(page, "expands")

    # Each refusal held the form: nothing was posted.
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_timeout(300)
    assert posts == []

    # Within the limits, the same words of a bundle and of a log.
    small = tmp_path / "small"
    small.mkdir()
    for rank in range(2):
        (small / f"rank{rank}.log").write_text("step 1 loss 2.0\n")
    drop_paths(page, small)
    assert selection(page, "as one job's bundle") == (
        "A bundle of 2 files from the folder small (32 bytes together) will be diagnosed together "
        "as one job's bundle."
    )
    one = tmp_path / "one.log"
    one.write_text("step 1 loss 2.0\n")
    drop_paths(page, one)
    assert selection(page, "sent whole") == "The log one.log (16 bytes) will be sent whole."
