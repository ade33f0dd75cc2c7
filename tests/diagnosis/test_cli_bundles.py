"""`rootcause diagnose DIR|ARCHIVE` without --offline: the bundle is posted as one archive to a
live server, which masks and analyses it; every output format shows the hang."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from diagnosis.models import Diagnosis
from rootcause.cli import app, client
from tests.diagnosis.test_bundles import DATALOADER, files_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def service(live_server, acme_token):
    return {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": acme_token}


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch):
    monkeypatch.setattr(client, "RETRY_PAUSES", (0.0, 0.0))
    monkeypatch.setattr(client, "POLL_FIRST", 0.05)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """A real bundle's files in a directory, as `rootcause run` leaves one."""
    job = tmp_path / "hang-bundle"
    job.mkdir()
    for name, data in files_of(DATALOADER):
        (job / name).write_bytes(data)
    return job


def test_a_directory_is_one_bundle_diagnosis_and_json_carries_the_hang(service, directory):
    result = CliRunner().invoke(app, ["diagnose", str(directory), "--json"], env=service)

    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["failure"]["slug"] == "rank-stalled-before-collective"
    assert body["initiating_rank"] == 2
    assert body["hang"]["culprits"][0]["rank"] == 2
    assert body["file"] == str(directory)
    diagnosis = Diagnosis.objects.get()
    assert (diagnosis.kind, diagnosis.filename) == ("bundle", "hang-bundle.tar.gz")
    assert "a bundle of 13 files" in result.stderr


def test_an_archive_is_sent_as_it_is_and_text_shows_the_rank_map_and_stacks(service):
    result = CliRunner().invoke(app, ["diagnose", str(DATALOADER)], env=service)

    assert result.exit_code == 1, result.output
    text = result.stdout
    assert "hang verdict: rank-stalled-before-collective (6 ranks)" in text
    assert "rank map: culprit 2; waiting 0-1, 3-5" in text
    assert "culprit rank 2" in text
    assert "rank 2: in `fetch_remote_sample` at program.py:50 (data loading" in text
    assert Diagnosis.objects.get().filename == DATALOADER.name


def test_junit_and_github_show_the_verdict_and_the_culprit(service, tmp_path):
    junit = CliRunner().invoke(app, ["diagnose", str(DATALOADER), "--format", "junit"], env=service)
    summary = tmp_path / "summary.md"
    github = CliRunner().invoke(
        app,
        ["diagnose", str(DATALOADER), "--format", "github"],
        env={**service, "GITHUB_STEP_SUMMARY": str(summary)},
    )

    root = ET.fromstring(junit.stdout.encode())  # noqa: S314  (our own output)
    failure = root.find(".//failure")
    assert failure is not None
    assert failure.get("type") == "rank-stalled-before-collective"
    assert "rank map: culprit 2" in (failure.text or "")
    annotation = github.stdout.splitlines()[0]
    assert annotation.startswith("::error title=")
    assert "on rank 2" in annotation
    assert "fetch_remote_sample" in annotation
    markdown = summary.read_text()
    assert "**Hang verdict.** `rank-stalled-before-collective`" in markdown
    assert "| 2 | 0.75 |" in markdown
    assert "in `fetch_remote_sample` at `program.py:50`" in markdown


def test_a_bundle_past_the_services_limit_is_a_usage_error(service, directory, settings):
    settings.ROOTCAUSE_BUNDLE_MAX_FILES = 3

    result = CliRunner().invoke(app, ["diagnose", str(directory)], env=service)

    assert result.exit_code == 2, result.output
    assert "413" in result.stderr
    assert "more than 3 files" in result.stderr
    assert not Diagnosis.objects.exists()


def test_a_directory_over_the_clients_own_limits_is_refused_before_upload(service, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log").write_bytes(b"x")
    (job / "huge.log").write_bytes(b"\0")

    os.truncate(job / "huge.log", 65 << 20)  # over the 64 MiB a file, sparse on disk

    result = CliRunner().invoke(app, ["diagnose", str(job)], env=service)

    assert result.exit_code == 2, result.output
    assert "huge.log" in result.stderr
    assert not Diagnosis.objects.exists()
