"""The installed `rootcause` command against a live server with a real worker, PostgreSQL and
Redis: what a CI step does after a failed training job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ROOTCAUSE = Path(sys.executable).parent / "rootcause"  # the console script of the install


def rootcause(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOTCAUSE), "diagnose", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )


def test_a_ci_step_gets_the_diagnosis_its_annotations_and_a_job_summary(
    real_worker, catalogue, live_server, acme_token, tmp_path
):
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    summary = tmp_path / "summary.md"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ROOTCAUSE_URL": live_server.url,
        "ROOTCAUSE_TOKEN": acme_token,
        "GITHUB_STEP_SUMMARY": str(summary),
    }

    as_json = rootcause(str(log), "--format", "json", "--idempotency-key", "run-1", env=env)
    github = rootcause(str(log), "--format", "github", "--idempotency-key", "run-1", env=env)

    assert as_json.returncode == 1, as_json.stderr  # 1: a failure was diagnosed
    row = json.loads(as_json.stdout)
    schema = json.loads((ROOT / "docs/result.schema.json").read_text())
    jsonschema.validate(row, schema)
    assert row["failure"]["slug"] == "optimizer-state-oom"
    assert "rootcause: " in as_json.stderr  # progress, on stderr only
    # the retry with the same key read the same diagnosis back
    assert github.returncode == 1, github.stderr
    assert github.stdout.startswith("::error title=Optimizer State Memory Explosion")
    text = summary.read_text()
    assert "## rootcause" in text
    assert "`optimizer-state-oom`" in text
    assert f"{live_server.url}/encyclopedia/optimizer-state-oom/" in text
    for secret in PLANTED_SECRETS.values():
        assert secret not in as_json.stdout + github.stdout + text
