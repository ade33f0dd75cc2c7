"""Every shell and YAML block of the docs is either a CI snippet that
tests/diagnosis/test_ci_snippets.py runs in its CI system's shell, or said here not to be one; and
the stand-in for GitHub Actions runs steps as GitHub does (tests/ci_snippets.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from tests.ci_snippets import (
    CI_SNIPPETS,
    NOT_CI,
    GitHubRunner,
    ci_snippet,
    github_steps,
    shell_like,
)


def test_every_shell_and_yaml_block_of_the_docs_is_run_here_or_said_not_to_be_ci():
    keys = [(s.path, s.heading) for s in shell_like()]

    unknown = [key for key in keys if key not in CI_SNIPPETS and key not in NOT_CI]
    assert not unknown, f"a new block in the docs: run it in CI_SNIPPETS or say why not: {unknown}"
    assert len(keys) == len(set(keys)), "two blocks under one heading: tell them apart"
    stale = (set(CI_SNIPPETS) | set(NOT_CI)) - set(keys)
    assert not stale, f"listed here but not in the docs: {stale}"


@pytest.mark.parametrize("key", [k for k, kind in CI_SNIPPETS.items() if kind == "github"])
def test_a_github_step_that_pipes_its_command_keeps_the_commands_status(key):
    """GitHub's default step shell is `bash -e {0}`: without pipefail, `train | tee log` has the
    status of tee, and `if: failure()` never runs."""
    for step in github_steps(yaml.safe_load(ci_snippet(key).text)):
        run = str(step.get("run", ""))
        if "|" in run.replace("||", ""):
            assert step.get("shell") == "bash" or "set -o pipefail" in run, step


def test_the_stand_in_runs_a_github_step_as_github_does(tmp_path):
    """The stand-in itself: the default shell has no pipefail (so the bug is visible), `shell:
    bash` has it, and `if: failure()` runs only after a failure."""
    workspace = tmp_path / "w"
    workspace.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    runner = GitHubRunner(workspace=workspace, env=env, secrets={})
    steps = [
        {"name": "default", "run": "false | tee x.log"},
        {"name": "after a success", "if": "failure()", "run": "true"},
        {"name": "bash", "shell": "bash", "run": "false | tee x.log"},
        {"name": "after a failure", "if": "failure()", "run": "echo seen"},
        {"name": "skipped", "run": "true"},
    ]

    ran = runner.run_job(steps)

    assert [(s.name, s.ran, s.code != 0) for s in ran] == [
        ("default", True, False),
        ("after a success", False, False),
        ("bash", True, True),
        ("after a failure", True, False),
        ("skipped", False, False),
    ]
