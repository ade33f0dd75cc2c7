"""The CI snippets of the docs, and small stand-ins for the CI systems that run them.

A snippet is run as its CI system runs it, not as one would like: a GitHub Actions `run` step in
`bash -e {0}` unless it names a shell (`shell: bash` is `bash --noprofile --norc -eo pipefail
{0}`), a later step only when its `if:` says so after an earlier failure, this repository's
composite action (`action.yml`) step by step; a GitLab CI job's `script` lines as one script of
`sh -e` (dash, as in `python:3.11-slim`, which has no `pipefail`), a job `when: on_failure` only
after a failed job of an earlier stage. Anything a stand-in does not know (an expression, a
shell, an action) is an error, never a guess.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
HEADING = re.compile(r"^#+ (.+)$", re.M)
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
# GitHub's documented shells on Linux (`defaults.run.shell` / `shell:`); none given: bash -e.
GITHUB_SHELLS = {
    None: ["bash", "-e", "{0}"],
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
}
GITLAB_STAGES = [".pre", "build", "test", "deploy", ".post"]
TIMEOUT = 120


@dataclass(frozen=True)
class Snippet:
    path: str  # relative to the repository
    heading: str  # the section it is under
    language: str
    text: str
    line: int


def fenced_snippets(paths: list[Path]) -> list[Snippet]:
    found = []
    for path in paths:
        text = path.read_text()
        headings = [(m.start(), m.group(1).strip()) for m in HEADING.finditer(text)]
        for match in FENCE.finditer(text):
            heading = next((h for at, h in reversed(headings) if at < match.start()), "")
            found.append(
                Snippet(
                    path=str(path.relative_to(ROOT)),
                    heading=heading,
                    language=match.group(1),
                    text=match.group(2),
                    line=text.count("\n", 0, match.start()) + 1,
                )
            )
    return found


# --- The docs' snippets -----------------------------------------------------------------------

DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "editors/vscode/README.md",
]
SHELL_LIKE = {"yaml", "yml", "sh", "bash", "shell"}
# The docs' stand-ins for a deployment's address and a token, replaced by the live server's.
PLACEHOLDER_URL = "https://rootcause.example.com"
PLACEHOLDER_TOKEN = "rc_live_..."

# (file, section) of every CI snippet, with the CI system that runs it.
CI_SNIPPETS = {
    ("docs/ci.md", "GitHub Actions"): "github",
    ("docs/ci.md", "GitLab CI"): "gitlab",
    ("docs/ci.md", "A plain shell step"): "shell",
    ("docs/live.md", "GitHub Actions"): "github",
}
# The other shell and YAML blocks, and why they are no CI step.
NOT_CI = {
    (
        "docs/fingerprints.md",
        "Fingerprint contract (shared by catalogue authors and the matching engine)",
    ): "a catalogue entry's fields",
    ("docs/masking.md", "Adding recognizers"): "a Presidio recognizer file",
    ("docs/live.md", "Slurm"): "a batch script; its command line is run by tests/live",
    ("docs/live.md", "Kubernetes (Kubeflow PyTorchJob)"): "a container spec",
}


def shell_like() -> list[Snippet]:
    return [s for s in fenced_snippets(DOCS) if s.language in SHELL_LIKE]


def ci_snippet(key: tuple[str, str]) -> Snippet:
    (snippet,) = [s for s in shell_like() if (s.path, s.heading) == key]
    return snippet


@dataclass
class Ran:
    """What one step or job did."""

    name: str
    ran: bool
    code: int = 0
    output: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    inner: list[Ran] = field(default_factory=list)  # a composite action's own steps


def run(argv: list[str], *, cwd: Path, env: Mapping[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    return done.returncode, done.stdout


# --- GitHub Actions ----------------------------------------------------------------------------


def _lookup(context: Mapping[str, Any], expression: str) -> str:
    value: Any = context
    parts = expression.split(".")
    for index, part in enumerate(parts):
        if parts[:1] == ["steps"] and index == 3 and isinstance(value, Mapping):
            return str(value.get(part, ""))  # an output a step did not write is empty
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"the stand-in cannot evaluate ${{{{ {expression} }}}}")
        value = value[part]
    return str(value)


def expand(text: str, context: Mapping[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: _lookup(context, m.group(1)), text)


def _condition(raw: object, failed: bool) -> bool:
    condition = str(raw or "success()").replace("${{", "").replace("}}", "").strip()
    known = {"success()": not failed, "failure()": failed, "always()": True}
    if condition not in known:
        raise ValueError(f"the stand-in cannot evaluate if: {condition}")
    return known[condition]


StepStandIn = Callable[[dict[str, Any], dict[str, str]], dict[str, str]]


@dataclass
class GitHubRunner:
    """One job on a Linux runner: `workspace` is the checkout, `env` the runner's environment."""

    workspace: Path
    env: dict[str, str]
    secrets: dict[str, str]
    # `uses:` other than this repository's action: what each gives as outputs.
    actions: dict[str, StepStandIn] = field(default_factory=dict)
    # Steps of action.yml replaced by name (e.g. its install step, tested on its own).
    replaced: dict[str, StepStandIn] = field(default_factory=dict)
    github: dict[str, str] = field(
        default_factory=lambda: {
            "run_id": "4242",
            "run_attempt": "1",
            "job": "train",
            "repository": "acme/train",
            "sha": "0" * 40,
        }
    )

    def __post_init__(self) -> None:
        self.temp = self.workspace.parent / "runner-temp"
        self.temp.mkdir(exist_ok=True)
        self.summary = self.temp / "step-summary.md"
        self.summary.touch()
        self.counter = 0

    def job_env(self) -> dict[str, str]:
        return {
            **self.env,
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_RUN_ID": self.github["run_id"],
            "GITHUB_RUN_ATTEMPT": self.github["run_attempt"],
            "GITHUB_JOB": self.github["job"],
            "GITHUB_REPOSITORY": self.github["repository"],
            "GITHUB_SHA": self.github["sha"],
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.temp),
        }

    def run_job(self, steps: list[dict[str, Any]]) -> list[Ran]:
        context: dict[str, Any] = {"secrets": self.secrets, "github": self.github, "steps": {}}
        return self._steps(steps, context, self.job_env(), composite=False)

    def _steps(
        self,
        steps: list[dict[str, Any]],
        context: dict[str, Any],
        env: dict[str, str],
        *,
        composite: bool,
    ) -> list[Ran]:
        results: list[Ran] = []
        failed = False
        for step in steps:
            name = str(step.get("name") or step.get("id") or step.get("uses") or "step")
            if not _condition(step.get("if"), failed):
                results.append(Ran(name, ran=False))
                continue
            ran = self._step(step, name, context, env, composite=composite)
            results.append(ran)
            if step.get("id"):
                context["steps"][step["id"]] = {"outputs": ran.outputs}
            failed = failed or ran.code != 0
            if composite and ran.code != 0:
                break  # a composite action stops at its first failing step
        return results

    def _step(
        self,
        step: dict[str, Any],
        name: str,
        context: dict[str, Any],
        env: dict[str, str],
        *,
        composite: bool,
    ) -> Ran:
        step_env = {
            **env,
            **{k: expand(str(v), context) for k, v in (step.get("env") or {}).items()},
        }
        if composite and name in self.replaced:
            return Ran(name, ran=True, outputs=self.replaced[name](context, step_env))
        if "uses" in step:
            return self._uses(step, name, context, step_env)
        shell = step.get("shell")
        if composite and shell is None:
            raise ValueError(f"a composite action's run step needs a shell: {name}")
        template = GITHUB_SHELLS.get(shell) or (shlex.split(shell) if "{0}" in str(shell) else None)
        if template is None:
            raise ValueError(f"the stand-in does not know the shell {shell!r}")
        self.counter += 1
        script = self.temp / f"step-{self.counter}.sh"
        script.write_text(expand(str(step["run"]), context))
        output_file = self.temp / f"output-{self.counter}"
        output_file.touch()
        argv = [part.replace("{0}", str(script)) for part in template]
        code, output = run(
            argv, cwd=self.workspace, env={**step_env, "GITHUB_OUTPUT": str(output_file)}
        )
        return Ran(name, ran=True, code=code, output=output, outputs=_outputs(output_file))

    def _uses(
        self, step: dict[str, Any], name: str, context: dict[str, Any], env: dict[str, str]
    ) -> Ran:
        uses = str(step["uses"])
        with_ = {k: expand(str(v), context) for k, v in (step.get("with") or {}).items()}
        if uses.split("@")[0] in self.actions:
            return Ran(name, ran=True, outputs=self.actions[uses.split("@")[0]](with_, env))
        if not re.fullmatch(r"[\w.-]+/rootcause@[\w.-]+|\./?", uses):
            raise ValueError(f"the stand-in does not know the action {uses}")
        return self._composite(name, with_, context, env)

    def _composite(
        self, name: str, with_: dict[str, str], context: dict[str, Any], env: dict[str, str]
    ) -> Ran:
        action = yaml.safe_load((ROOT / "action.yml").read_text())
        unknown = set(with_) - set(action["inputs"])
        if unknown:
            raise ValueError(f"action.yml has no input {sorted(unknown)}")
        inputs = {k: with_.get(k, str(v.get("default", ""))) for k, v in action["inputs"].items()}
        missing = [k for k, v in action["inputs"].items() if v.get("required") and not inputs[k]]
        if missing:
            raise ValueError(f"action.yml's required inputs are missing: {missing}")
        inner = {"inputs": inputs, "github": context["github"], "steps": {}}
        steps = self._steps(
            action["runs"]["steps"],
            inner,
            {**env, "GITHUB_ACTION_PATH": str(ROOT)},
            composite=True,
        )
        outputs = {k: expand(str(v["value"]), inner) for k, v in action["outputs"].items()}
        code = next((s.code for s in steps if s.code), 0)
        output = "".join(s.output for s in steps)
        return Ran(name, ran=True, code=code, output=output, outputs=outputs, inner=steps)


def _outputs(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key: value for key, value in pairs}


def github_steps(document: Any) -> list[dict[str, Any]]:
    """The steps of a workflow's one job, or a fragment that is a list of steps."""
    if isinstance(document, list):
        return document
    (job,) = document["jobs"].values()
    return list(job["steps"])


# --- GitLab CI ---------------------------------------------------------------------------------


def gitlab_pipeline(
    document: dict[str, Any], *, workspace: Path, env: dict[str, str], shell_argv: list[str]
) -> dict[str, Ran]:
    """The pipeline's jobs stage by stage; each job's `script` is one `shell` script, and whether
    a job runs depends on the jobs of the earlier stages."""
    stages = list(document.get("stages") or GITLAB_STAGES)
    jobs = {k: v for k, v in document.items() if isinstance(v, dict) and "script" in v}
    results: dict[str, Ran] = {}
    failed = False
    for stage in stages:
        names = [name for name, job in jobs.items() if job.get("stage", "test") == stage]
        ran = [_gitlab_job(name, jobs[name], failed, workspace, env, shell_argv) for name in names]
        results.update((r.name, r) for r in ran)
        failed = failed or any(r.code for r in ran)
    unknown = set(jobs) - set(results)
    if unknown:
        raise ValueError(f"jobs in no known stage: {sorted(unknown)}")
    return results


def _gitlab_job(
    name: str,
    job: dict[str, Any],
    failed: bool,
    workspace: Path,
    env: dict[str, str],
    shell_argv: list[str],
) -> Ran:
    when = job.get("when", "on_success")
    if when not in ("on_success", "on_failure", "always"):
        raise ValueError(f"the stand-in does not know when: {when}")
    if (when == "on_success" and failed) or (when == "on_failure" and not failed):
        return Ran(name, ran=False)
    script = workspace.parent / f"gitlab-{name}.sh"
    script.write_text("\n".join(str(line) for line in job["script"]) + "\n")
    job_env = {
        **env,
        "GITLAB_CI": "true",
        "CI": "true",
        "CI_JOB_ID": "1001",
        "CI_JOB_NAME": name,
        "CI_JOB_URL": "https://gitlab.example/acme/train/-/jobs/1001",
        "CI_COMMIT_SHA": "0" * 40,
        **{k: str(v) for k, v in (job.get("variables") or {}).items()},
    }
    code, output = run([*shell_argv, str(script)], cwd=workspace, env=job_env)
    return Ran(name, ran=True, code=code, output=output)
