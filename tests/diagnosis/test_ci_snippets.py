"""Every CI snippet of the docs runs, in the shell its CI system uses, against a training that
fails and one that passes: the diagnosis runs exactly when the training failed, the job fails
with it, and the real `rootcause` command reaches a live server with the log.

Which blocks are CI snippets: tests/test_ci_snippets.py. The stand-ins for GitHub Actions and
GitLab CI: tests/ci_snippets.py. `pip` is a stub that only records its arguments (installing the
client from the service is the subject of tests/diagnosis/test_downloads.py); `python` and
`rootcause` are the real ones.
"""

from __future__ import annotations

import hashlib
import re
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from diagnosis.models import Diagnosis
from tests.ci_snippets import (
    CI_SNIPPETS,
    GitHubRunner,
    Ran,
    Snippet,
    ci_snippet,
    github_steps,
    gitlab_pipeline,
    run,
)
from tests.diagnosis.logs import OOM_LOG

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
# The docs' stand-ins for a deployment's address and a token, replaced by the live server's.
PLACEHOLDER_URL = "https://rootcause.example.com"
PLACEHOLDER_TOKEN = "rc_live_..."

TRAIN = """\
import sys

if "--passes" in open("outcome").read():
    print("step 50 loss 0.1012")
    sys.exit(0)
sys.stderr.write({log!r})
sys.exit(1)
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture(scope="session")
def _pattern_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rootcause-cache")


@pytest.fixture
def machine(tmp_path: Path, _pattern_cache: Path) -> dict[str, Any]:
    """A runner's workspace with train.py, and a PATH with python, rootcause and a stub pip."""
    workspace, stubs = tmp_path / "workspace", tmp_path / "bin"
    workspace.mkdir()
    stubs.mkdir()
    (workspace / "train.py").write_text(TRAIN.format(log=OOM_LOG))
    venv = Path(sys.executable).parent
    _executable(stubs / "python", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    _executable(stubs / "rootcause", f'#!/bin/sh\nexec "{venv / "rootcause"}" "$@"\n')
    _executable(stubs / "pip", f'#!/bin/sh\necho "$@" >> "{tmp_path / "pip.calls"}"\n')
    env = {
        "PATH": f"{stubs}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "ROOTCAUSE_CACHE_DIR": str(_pattern_cache),
    }
    return {"workspace": workspace, "env": env, "pip_calls": tmp_path / "pip.calls"}


def _text(snippet: Snippet, url: str, token: str) -> str:
    return snippet.text.replace(PLACEHOLDER_URL, url).replace(PLACEHOLDER_TOKEN, token)


def _installed(context: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """action.yml's install step, replaced: its virtualenv's command is the real one."""
    bin_dir = Path(env["RUNNER_TEMP"]) / "rootcause-venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    _executable(bin_dir / "rootcause", '#!/bin/sh\nexec rootcause "$@"\n')
    return {}


def _github_runner(machine: dict[str, Any], token: str) -> GitHubRunner:
    return GitHubRunner(
        workspace=machine["workspace"],
        env=machine["env"],
        secrets={"ROOTCAUSE_TOKEN": token},
        actions={
            "actions/checkout": lambda with_, env: {},
            "actions/setup-python": lambda with_, env: {"python-path": "python"},
        },
        replaced={"Install the rootcause client": _installed},
    )


def _run_github(snippet: Snippet, machine: dict[str, Any], url: str, token: str) -> bool:
    runner = _github_runner(machine, token)
    steps = runner.run_job(github_steps(yaml.safe_load(_text(snippet, url, token))))
    machine["steps"] = steps
    machine["summary"] = runner.summary.read_text()
    return any(step.code for step in steps)


def _run_gitlab(snippet: Snippet, machine: dict[str, Any], url: str, token: str) -> bool:
    jobs = gitlab_pipeline(
        yaml.safe_load(_text(snippet, url, token)),
        workspace=machine["workspace"],
        env={**machine["env"], "ROOTCAUSE_TOKEN": token},
        shell_argv=["sh", "-e"],  # dash, as in python:3.11-slim
    )
    machine["steps"] = list(jobs.values())
    return any(job.code for job in jobs.values())


def _run_shell(snippet: Snippet, machine: dict[str, Any], url: str, token: str) -> bool:
    script = machine["workspace"].parent / "step.sh"
    script.write_text(_text(snippet, url, token))
    shell = {"sh": "sh", "shell": "sh", "bash": "bash"}[snippet.language]
    code, output = _ci_run([shell, str(script)], machine, JOB_ID="job-7")
    machine["steps"] = [Ran("script", ran=True, code=code, output=output)]
    return code != 0


def _ci_run(argv: list[str], machine: dict[str, Any], **env: str) -> tuple[int, str]:
    return run(argv, cwd=machine["workspace"], env={**machine["env"], **env})


@pytest.fixture
def release(settings: Any, tmp_path: Path, live_server: Any) -> dict[str, Any]:
    """A client wheel (its bytes do not matter here) served at /downloads/ of the live server."""
    settings.SITE_URL = live_server.url
    settings.DOWNLOADS_DIR = tmp_path / "dist"
    settings.DOWNLOADS_DIR.mkdir()
    wheel = settings.DOWNLOADS_DIR / f"rootcause-{VERSION}-py3-none-any.whl"
    wheel.write_bytes(b"PK a wheel as far as this test cares")
    return {
        "url": f"{live_server.url}/downloads/{wheel.name}",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
    }


def _installs_come_from_the_service(machine: dict[str, Any], release: dict[str, Any]) -> None:
    """What a snippet asks pip to install is the wheel the service serves, and it is there."""
    calls = machine["pip_calls"].read_text() if machine["pip_calls"].exists() else ""
    for url in re.findall(r"https?://\S+", calls):
        assert url == release["url"], calls
        answer = httpx.get(url, timeout=10)
        assert answer.status_code == 200
        assert hashlib.sha256(answer.content).hexdigest() == release["sha256"]


RUNNERS = {"github": _run_github, "gitlab": _run_gitlab, "shell": _run_shell}


@pytest.mark.heavy  # a live server and the real command, several processes per case
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("outcome", ["fails", "passes"])
@pytest.mark.parametrize("key", list(CI_SNIPPETS), ids=lambda k: f"{k[0]}:{k[1]}")
def test_the_snippet_diagnoses_a_failed_training_and_leaves_a_passing_one_alone(
    key, outcome, machine, live_server, acme_token, release
):
    snippet = ci_snippet(key)
    (machine["workspace"] / "outcome").write_text(f"--{outcome}")

    job_failed = RUNNERS[CI_SNIPPETS[key]](snippet, machine, live_server.url, acme_token)

    log = "\n".join(f"== {s.name} ran={s.ran} code={s.code}\n{s.output}" for s in machine["steps"])
    diagnoses = list(Diagnosis.objects.values_list("failure_slug", flat=True))
    _installs_come_from_the_service(machine, release)
    if outcome == "passes":
        assert not job_failed, log
        assert diagnoses == [], log
        return
    assert job_failed, f"the training failed and the job passed:\n{log}"
    assert diagnoses == ["optimizer-state-oom"], log
    if key == ("docs/ci.md", "GitHub Actions"):
        (action,) = [s for s in machine["steps"] if s.name == "Why did it fail?"]
        assert action.outputs["exit-code"] == "1", log
        (find,) = [s for s in action.inner if s.name == "Find the client on the service"]
        assert find.outputs["wheel"] == f"{release['url']}#sha256={release['sha256']}", log
        assert "optimizer-state-oom" in machine["summary"] or "Optimizer" in machine["summary"]
    if key == ("docs/ci.md", "GitLab CI"):
        report = (machine["workspace"] / "rootcause.xml").read_text()
        assert "<failure" in report, report


@pytest.mark.heavy  # a live server and the real command
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("fail_on", "step_fails"), [("diagnosed", True), ("error", False), ("never", False)]
)
def test_the_action_reports_the_exit_code_and_fails_the_step_as_fail_on_says(
    fail_on, step_fails, machine, live_server, acme_token
):
    """Under `shell: bash` (-e), a diagnosis (exit code 1) must not end the step before the
    exit-code output is written and fail-on applied."""
    (machine["workspace"] / "train.log").write_text(OOM_LOG)
    uses = {
        "name": "Why did it fail?",
        "uses": "acme/rootcause@v1",
        "with": {"log": "train.log", "server": live_server.url, "fail-on": fail_on},
        "env": {},
    }

    (step,) = _github_runner(machine, acme_token).run_job([uses])

    assert step.outputs["exit-code"] == "1", step.output
    assert (step.code != 0) is step_fails, step.output
    assert "::error" in step.output
