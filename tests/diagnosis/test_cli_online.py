"""`rootcause diagnose` without --offline: the CLI posts to a live server and waits for the result."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from diagnosis.models import Diagnosis
from rootcause.cli import app, client
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def service(live_server, acme_token):
    return {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": acme_token}


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch):
    monkeypatch.setattr(client, "RETRY_PAUSES", (0.0, 0.0))
    monkeypatch.setattr(client, "POLL_FIRST", 0.05)


def test_a_log_is_diagnosed_by_the_service_and_kept_in_history(service, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)

    result = CliRunner().invoke(app, ["diagnose", str(log), "--format", "json"], env=service)

    assert result.exit_code == 1, result.output  # 1: a failure was diagnosed
    body = json.loads(result.stdout)
    # the same typed result as --offline prints, with the diagnosis id in the service's history
    assert body["outcome"] == "diagnosed"
    assert body["failure"]["slug"] == "optimizer-state-oom"
    assert body["masking"]["HF_TOKEN"] >= 1
    assert body["file"] == str(log)
    assert "status" not in body
    for value in PLANTED_SECRETS.values():
        assert value not in result.output
    diagnosis = Diagnosis.objects.get()
    assert body["id"] == str(diagnosis.id)
    assert diagnosis.source == Diagnosis.Source.CLI
    assert diagnosis.filename == "train.log"  # the history shows the file, not "(pasted)"


def test_a_gz_file_is_unpacked_and_a_retry_with_the_same_key_is_not_a_second_diagnosis(
    service, tmp_path
):
    log = tmp_path / "train.log.gz"
    log.write_bytes(gzip.compress(OOM_LOG.encode()))
    args = ["diagnose", str(log), "--idempotency-key", "job-7"]

    first = CliRunner().invoke(app, args, env=service)
    second = CliRunner().invoke(app, args, env=service)

    assert first.exit_code == second.exit_code == 1, first.output + second.output
    assert "optimizer-state-oom" in first.stdout
    assert first.stdout == second.stdout
    assert Diagnosis.objects.get().filename == "train.log"


def test_each_file_is_its_own_diagnosis_under_one_key(service, tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(OOM_LOG)
    b.write_text("epoch 1 step 3 loss 0.1\n")
    args = ["diagnose", str(a), str(b), "--idempotency-key", "job-8", "--json"]

    result = CliRunner().invoke(app, args, env=service)

    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["outcome"] for r in rows] == ["diagnosed", "no_match"]
    assert sorted(Diagnosis.objects.values_list("filename", flat=True)) == ["a.log", "b.log"]


def test_a_refused_log_and_a_bad_token_are_usage_errors(service, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")

    refused = CliRunner().invoke(app, ["diagnose", str(empty)], env=service)
    unauthorised = CliRunner().invoke(
        app, ["diagnose", str(empty)], env={**service, "ROOTCAUSE_TOKEN": "rc_wrong"}
    )

    assert refused.exit_code == 2
    assert "400" in refused.stderr
    assert "empty" in refused.stderr
    assert unauthorised.exit_code == 2
    assert "401" in unauthorised.stderr


def test_an_unreachable_service_is_named(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)

    result = CliRunner().invoke(
        app,
        ["diagnose", str(log)],
        env={"ROOTCAUSE_URL": "http://127.0.0.1:1", "ROOTCAUSE_TOKEN": "rc_x"},
    )

    assert result.exit_code == 4
    assert "cannot reach http://127.0.0.1:1" in result.stderr


def test_a_visitor_without_a_token_is_diagnosed_until_the_allowance_is_used(
    live_server, tmp_path, settings
):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    visitor = {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": None}
    allowance = settings.TIER_DAILY_DIAGNOSES["anonymous"]

    results = [
        CliRunner().invoke(app, ["diagnose", str(log), "--json"], env=visitor)
        for _ in range(allowance + 1)
    ]
    allowed = CliRunner().invoke(app, ["diagnose", str(log), "--allow-outage"], env=visitor)

    assert [r.exit_code for r in results] == [1] * allowance + [3], results[-1].output
    # read back by the link of the answer (its access key), with no history
    assert json.loads(results[0].stdout)["failure"]["slug"] == "optimizer-state-oom"
    assert Diagnosis.objects.filter(organization=None).count() == allowance
    assert "(429)" in results[-1].stderr
    assert "retry after" in results[-1].stderr.lower()
    assert allowed.exit_code == 0
    assert "warning:" in allowed.stderr


def test_ci_metadata_and_labels_are_kept_with_the_diagnosis(service, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/train",
        "GITHUB_RUN_ID": "42",
        "GITHUB_JOB": "smoke",
        "GITHUB_SHA": "0123abcd",
    }

    result = CliRunner().invoke(
        app, ["diagnose", str(log), "--label", "nightly"], env={**service, **github}
    )

    assert result.exit_code == 1, result.output
    diagnosis = Diagnosis.objects.get()
    assert (diagnosis.job, diagnosis.commit, diagnosis.labels) == ("smoke", "0123abcd", ["nightly"])
    assert diagnosis.run_url.endswith("/acme/train/actions/runs/42")


def test_another_log_under_a_used_key_is_a_usage_error(service, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    args = ["diagnose", str(log), "--idempotency-key", "job-9"]
    first = CliRunner().invoke(app, args, env=service)
    log.write_text(OOM_LOG + "one more line\n")

    second = CliRunner().invoke(app, args, env=service)

    assert first.exit_code == 1, first.output
    assert second.exit_code == 2
    assert "(422)" in second.stderr


def test_the_result_links_to_its_page_and_a_visitors_link_carries_its_key(
    service, live_server, tmp_path
):
    import httpx

    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)

    member = CliRunner().invoke(app, ["diagnose", str(log), "--json"], env=service)
    visitor = CliRunner().invoke(
        app, ["diagnose", str(log), "--json"], env={"ROOTCAUSE_URL": live_server.url}
    )

    body = json.loads(member.stdout)
    assert body["link"] == f"{live_server.url}/diagnoses/{body['id']}/"
    anonymous = json.loads(visitor.stdout)
    assert anonymous["link"].startswith(f"{live_server.url}/diagnoses/{anonymous['id']}/?key=")
    page = httpx.get(anonymous["link"], timeout=30)
    assert page.status_code == 200
    assert "Optimizer State Memory Explosion" in page.text
