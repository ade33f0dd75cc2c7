"""A bundle (one job's per-rank files) through the API: several files of one form, or one archive,
become one diagnosis whose pipeline masks every file, analyses the hang and remediates; limits
answer 400/413 problems before anything is charged or staged."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from billing_tiers.models import QuotaCharge
from diagnosis.models import Diagnosis
from diagnosis.staging import MASKED, RAW, get_store, staging_key

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
CORPUS = Path(__file__).resolve().parents[2] / "bench" / "hangruns" / "corpus" / "dev"
# A real 6-rank gloo job (bench/hangruns): rank 2 blocks in its DataLoader's dataset fetch
# before the step's collectives; py-spy text stacks, faulthandler in the logs, no flight recorder.
DATALOADER = CORPUS / "dataloader__0.tar.gz"
# A real 6-rank job whose rank 1 blocks in a DataLoader; flight-recorder pickles among its files.
WITH_PICKLES = CORPUS / "dataloader__2.tar.gz"


def files_of(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tar:
        return [
            (m.name, tar.extractfile(m).read())  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isreg()
        ]


def _form(files: list[tuple[str, bytes]], **fields: str) -> dict[str, Any]:
    return {"file": [SimpleUploadedFile(name, data) for name, data in files], **fields}


def _post(client: Any, files: list[tuple[str, bytes]], **extra: Any) -> Any:
    return client.post(URL, _form(files), format="multipart", **extra)


def _done(client: Any, response: Any) -> dict[str, Any]:
    assert response.status_code == 202, response.content
    return client.get(response["Location"]).json()


def test_several_files_of_one_form_are_one_bundle_diagnosis(
    acme_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, files_of(DATALOADER))

    body = _done(acme_api, response)
    assert body["status"] == "done", body
    assert body["failure"]["slug"] == "rank-stalled-before-collective"
    assert body["initiating_rank"] == 2
    hang = body["hang"]
    assert hang["world_size"] == 6
    assert [c["rank"] for c in hang["culprits"]] == [2]
    culprit_group = next(g for g in hang["stacks"] if g["ranks"] == "2")
    assert culprit_group["meaning"] == "data"
    assert body["filename"].startswith("13 files: ")
    diagnosis = Diagnosis.objects.get(pk=body["id"])
    assert diagnosis.kind == Diagnosis.Kind.BUNDLE
    # One unit for the whole bundle, and nothing left staged.
    assert QuotaCharge.objects.count() == 1
    assert response["RateLimit-Remaining"] == str(int(response["RateLimit-Limit"]) - 1)
    store = get_store(settings.REDIS_URL)
    assert not store.exists(staging_key(RAW, body["id"]))
    assert not store.exists(staging_key(MASKED, body["id"]))


def test_one_archive_is_a_bundle_and_its_pickles_are_read(
    acme_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, [(WITH_PICKLES.name, WITH_PICKLES.read_bytes())])

    body = _done(acme_api, response)
    assert body["failure"]["slug"] == "rank-stalled-before-collective"
    assert body["initiating_rank"] == 1
    assert body["hang"]["artefacts"]["fr"] >= 1
    assert body["filename"] == WITH_PICKLES.name


def test_a_zip_and_one_file_marked_as_a_bundle_are_bundles_too(
    acme_api, django_capture_on_commit_callbacks
):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files_of(DATALOADER):
            archive.writestr(f"job/{name}", data)
    one_log = [("rank2.log", dict(files_of(DATALOADER))["rank2.log"])]
    with django_capture_on_commit_callbacks(execute=True):
        zipped = _post(acme_api, [("bundle.zip", buffer.getvalue())])
        marked = acme_api.post(URL, _form(one_log, kind="bundle"), format="multipart")

    assert _done(acme_api, zipped)["initiating_rank"] == 2
    assert Diagnosis.objects.get(pk=marked.json()["id"]).kind == Diagnosis.Kind.BUNDLE


def test_one_plain_file_is_still_a_log(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, [("train.log", b"step 1 loss 2.0\nCUDA out of memory\n")])

    diagnosis = Diagnosis.objects.get(pk=response.json()["id"])
    assert diagnosis.kind == Diagnosis.Kind.LOG
    assert diagnosis.failure_slug == "optimizer-state-oom"


def test_every_file_is_masked_before_the_analysis_reads_it(
    acme_api, django_capture_on_commit_callbacks
):
    files = files_of(DATALOADER)
    files = [
        (
            f"/home/alice.smith/runs/{name}",
            data.replace(b"/", b"/home/alice.smith/", 1)
            + b"\nconnected to gpu-node-17.corp.example.com as alice.smith@example.com\n",
        )
        for name, data in files
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, files)

    body = _done(acme_api, response)
    stored = json.dumps(Diagnosis.objects.get(pk=body["id"]).result) + body["filename"]
    for secret in ("alice.smith", "gpu-node-17", "example.com"):
        assert secret not in stored
    assert body["masking"].get("EMAIL_ADDRESS", 0) >= 13
    assert body["initiating_rank"] == 2


def test_a_repeated_key_answers_the_first_bundle_diagnosis_and_charges_once(
    acme_api, django_capture_on_commit_callbacks
):
    files = files_of(DATALOADER)
    with django_capture_on_commit_callbacks(execute=True):
        first = _post(acme_api, files, HTTP_IDEMPOTENCY_KEY="job-1")
        again = _post(acme_api, files, HTTP_IDEMPOTENCY_KEY="job-1")
        other = _post(acme_api, files[:-1], HTTP_IDEMPOTENCY_KEY="job-1")

    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["id"] == first.json()["id"]
    assert other.status_code == 422
    assert QuotaCharge.objects.count() == 1


def _problem(response: Any, status: int, slug: str) -> str:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"].endswith("/" + slug)
    return str(body["detail"])


@override_settings(ROOTCAUSE_BUNDLE_MAX_FILES=5)
def test_too_many_files_is_413_and_nothing_is_charged(acme_api):
    detail = _problem(_post(acme_api, files_of(DATALOADER)), 413, "bundle-too-large")

    assert "more than 5 files" in detail
    assert Diagnosis.objects.count() == 0
    assert QuotaCharge.objects.count() == 0


@override_settings(ROOTCAUSE_BUNDLE_MAX_BYTES=1 << 20)
def test_an_archive_that_expands_past_the_limit_is_refused_before_it_is_expanded(acme_api):
    # 1 GB of zeros in a gzip of about 1 MB: its trailer declares the size, and the refusal
    # comes from that, not from expanding it.
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as gz:
        info = tarfile.TarInfo("rank0.log")
        info.size = 1 << 30
        gz.write(info.tobuf())
        zeros = b"\0" * (1 << 20)
        for _ in range(1024):
            gz.write(zeros)
    bomb = buffer.getvalue()
    assert len(bomb) < 2 << 20

    detail = _problem(_post(acme_api, [("bundle.tar.gz", bomb)]), 413, "bundle-too-large")
    assert "refused before expanding it" in detail
    assert Diagnosis.objects.count() == 0


@override_settings(ROOTCAUSE_BUNDLE_MAX_BYTES=64 * 1024)
def test_files_larger_than_the_bundle_limit_together_are_413(acme_api):
    files = [(f"rank{r}.log", b"x" * 20_000 + b"\n") for r in range(4)]

    _problem(_post(acme_api, files), 413, "bundle-too-large")


class _Evil:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (print, ("pwned",))


def test_a_pickle_that_builds_another_object_is_refused_with_400(acme_api):
    files = [*files_of(DATALOADER), ("nccl_trace_rank_0", pickle.dumps(_Evil(), protocol=2))]

    detail = _problem(_post(acme_api, files), 400, "bundle-rejected")
    assert "nccl_trace_rank_0" in detail
    assert Diagnosis.objects.count() == 0


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ([("bundle.zip", b"PK\x03\x04" + b"\x07" * 2000)], "not a readable zip archive"),
        (
            [("rank0.log", b"step 1\n"), ("more.tar.gz", DATALOADER.read_bytes())],
            "an archive among other files",
        ),
    ],
)
def test_a_broken_archive_or_an_archive_among_files_is_400(acme_api, files, words):
    assert words in _problem(_post(acme_api, files), 400, "bundle-rejected")


def test_another_organisation_cannot_read_a_bundle_diagnosis(
    acme_api, umbrella_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, files_of(DATALOADER))

    assert umbrella_api.get(response["Location"]).status_code == 404


# --- The web page ------------------------------------------------------------------------------


def test_several_files_dropped_on_the_page_are_one_bundle_and_its_page_shows_the_rank_map(
    client, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    uploads = [SimpleUploadedFile(name, data) for name, data in files_of(DATALOADER)]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_file": uploads})

    assert response.status_code == 302, response.content
    page = client.get(response["Location"]).content.decode()
    assert 'id="rank-map"' in page
    assert 'data-rank="2" data-state="culprit"' in page
    for rank in (0, 1, 3, 4, 5):
        assert f'data-rank="{rank}" data-state="waiting"' in page
    # The grouped stacks: the culprit's group marked, its frame and what it means.
    assert "in <code>fetch_remote_sample</code> at <code>program.py:50</code>" in page
    assert "data loading: a DataLoader or dataset fetch that does not return" in page
    assert "ranks 0-1, 3-5" in page
    # The per-rank table of a log's diagnosis is the rank map's here.
    assert 'id="ranks"' not in page
    assert Diagnosis.objects.get().kind == Diagnosis.Kind.BUNDLE


def test_an_archive_chosen_on_the_page_is_a_bundle_and_missing_dumps_show(
    client, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    # Rank 4's stack dump and log (its faulthandler stacks) left out: the map shows it without a
    # dump, and the verdict still stands.
    files = [(n, d) for n, d in files_of(DATALOADER) if n not in ("pyspy_rank4.txt", "rank4.log")]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = SimpleUploadedFile("job.tar.gz", buffer.getvalue())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_file": archive})

    page = client.get(response["Location"]).content.decode()
    assert 'data-rank="2" data-state="culprit"' in page
    assert 'data-rank="4" data-state="missing"' in page
    assert "stack dump: rank 4" in page
