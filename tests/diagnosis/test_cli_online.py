"""`rootcause diagnose` without --offline: the CLI posts to a live server and waits for the result."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from diagnosis.models import Diagnosis
from rootcause.cli import app
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def service(live_server, acme_token):
    return {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": acme_token}


def test_a_log_is_diagnosed_by_the_service_and_kept_in_history(service, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)

    result = CliRunner().invoke(app, ["diagnose", str(log), "--json"], env=service)

    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
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


def test_a_gz_file_is_sent_as_is_and_a_retry_with_the_same_key_is_not_a_second_diagnosis(
    service, tmp_path
):
    log = tmp_path / "train.log.gz"
    log.write_bytes(gzip.compress(OOM_LOG.encode()))
    args = ["diagnose", str(log), "--idempotency-key", "job-7"]

    first = CliRunner().invoke(app, args, env=service)
    second = CliRunner().invoke(app, args, env=service)

    assert first.exit_code == second.exit_code == 0, first.output + second.output
    assert "optimizer-state-oom" in first.output
    assert Diagnosis.objects.count() == 1


def test_a_refused_log_and_a_bad_token_fail_clearly(service, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")

    refused = CliRunner().invoke(app, ["diagnose", str(empty)], env=service)
    unauthorised = CliRunner().invoke(
        app, ["diagnose", str(empty)], env={**service, "ROOTCAUSE_TOKEN": "rc_wrong"}
    )

    assert refused.exit_code == 1
    assert "400" in refused.output
    assert "empty" in refused.output
    assert unauthorised.exit_code == 1
    assert "401" in unauthorised.output


def test_an_unreachable_service_is_named(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)

    result = CliRunner().invoke(
        app,
        ["diagnose", str(log)],
        env={"ROOTCAUSE_URL": "http://127.0.0.1:1", "ROOTCAUSE_TOKEN": "rc_x"},
    )

    assert result.exit_code == 1
    assert "cannot reach http://127.0.0.1:1" in result.output
