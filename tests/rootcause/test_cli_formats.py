"""The output formats of `rootcause diagnose`: github, junit and json."""

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import msgspec
import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.cli.errors import QuotaExceeded, ServiceUnavailable
from rootcause.cli.formats import (
    MAX_ANNOTATIONS,
    github_annotations,
    junit_report,
    step_summary,
    workflow_command,
)
from rootcause.cli.results import FileResult, Outcome
from rootcause.engine import Engine
from rootcause.result import Failure, RankRow, Remediation
from tests.rootcause.fixture_catalogue import entries

LOG = (
    "[rank0]: step 1 loss 2.0\n"
    "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    "[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n"
)


@pytest.fixture
def runner(monkeypatch):
    engine = Engine(entries())
    monkeypatch.setattr(rootcause.cli, "get_engine", lambda: engine)
    return CliRunner()


def diagnosed(file="train.log", slug="shape-mismatch", rank=1, root_cause="It broke."):
    return FileResult(
        file=file,
        outcome="diagnosed",
        failure=Failure(slug=slug, title="Shape Mismatch", category="shapes", confidence=0.9),
        root_cause=root_cause,
        initiating_rank=rank,
        ranks=[RankRow(rank=rank, slug=slug, first_error_line=812, collateral=False)],
        collateral=[],
        evidence=[],
        missing_facts=[],
        encyclopedia_url=f"/encyclopedia/{slug}/",
        catalogue_version="v1",
        remediation=Remediation(
            steps=["Check the `view()` call"],
            command="python train.py --batch 8",
            verification_command="python -c 'import torch'",
            verification_expect="ok",
        ),
    )


def no_match(file="ok.log"):
    return FileResult(
        file=file,
        outcome="no_match",
        failure=None,
        root_cause=None,
        initiating_rank=None,
        ranks=[],
        collateral=[],
        evidence=[],
        missing_facts=["include the stderr of every rank"],
        encyclopedia_url=None,
        catalogue_version="v1",
    )


def test_workflow_commands_escape_as_github_does():
    line = workflow_command("error", "100% broken\r\nnext", title="a: b, c", file="x,y.log")
    assert line == "::error title=a%3A b%2C c,file=x%2Cy.log::100%25 broken%0D%0Anext"


def test_one_annotation_per_distinct_failure_with_rank_file_and_line():
    outcomes = [
        Outcome("a.log", diagnosed("a.log")),
        Outcome("b.log", diagnosed("b.log")),  # the same failure: folded into the first
        Outcome("c.log", diagnosed("c.log", rank=2)),
        Outcome("ok.log", no_match()),
    ]

    lines = github_annotations(outcomes)

    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 2
    assert errors[0].startswith(
        "::error title=Shape Mismatch (shape-mismatch) on rank 1,file=a.log,line=812::It broke."
    )
    assert "%0AFix: python train.py --batch 8" in errors[0]
    assert "%0AVerify: python -c 'import torch'" in errors[0]
    assert "Also in: b.log" in errors[0]
    assert "on rank 2,file=c.log" in errors[1]
    assert "::notice title=rootcause::No known failure found in ok.log" in lines


def test_at_most_ten_annotations_and_a_note_for_the_rest():
    outcomes = [Outcome(f"{i}.log", diagnosed(f"{i}.log", rank=i)) for i in range(13)]
    lines = github_annotations(outcomes)
    assert len([line for line in lines if line.startswith("::error")]) == MAX_ANNOTATIONS
    assert lines[-1].startswith("::warning title=rootcause::3 more failure annotations")


def test_logs_that_could_not_be_diagnosed_are_errors_or_warnings_when_allowed():
    lines = github_annotations(
        [
            Outcome("a.log", error=QuotaExceeded("a.log: over quota")),
            Outcome("b.log", error=ServiceUnavailable("b.log: down"), allowed=True),
        ]
    )
    assert lines == [
        "::error title=rootcause could not diagnose a.log::a.log: over quota",
        "::warning title=rootcause could not diagnose b.log::b.log: down",
    ]


def test_the_step_summary_has_class_root_cause_fix_verification_and_link():
    summary = step_summary(
        [
            Outcome("a.log", diagnosed("a.log", root_cause="<b>boom</b> *not bold* | pipe")),
            Outcome("ok.log", no_match()),
            Outcome("c.log", error=ServiceUnavailable("c.log: down"), allowed=True),
        ],
        "https://rootcause.example.com",
    )

    assert "| `a.log` | **Shape Mismatch** (`shape-mismatch`) | 1 |" in summary
    # text from the log renders as text: no HTML, no emphasis, no broken table
    assert "&lt;b&gt;boom&lt;/b&gt; \\*not bold\\* \\| pipe" in summary
    assert "<b>" not in summary
    assert "- Check the `view()` call" in summary  # catalogue text is Markdown already
    assert "```sh\npython train.py --batch 8\n```" in summary
    assert "```sh\npython -c 'import torch'\n```" in summary
    assert "(https://rootcause.example.com/encyclopedia/shape-mismatch/)" in summary
    assert "### `ok.log`: no known failure found" in summary
    assert "outage (allowed)" in summary


def test_format_github_writes_annotations_and_appends_the_summary(runner, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")

    result = runner.invoke(
        rootcause.cli.app,
        ["diagnose", str(log), "--offline", "--format", "github"],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )

    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("::error title=Shape Mismatch (shape-mismatch) on rank 1,")
    assert f"file={log},line=2::" in result.stdout
    text = summary.read_text()
    assert text.startswith("earlier step\n## rootcause\n")
    assert "verify-shape-mismatch" in text


def test_junit_is_valid_xml_with_one_case_per_log():
    nasty = diagnosed("a.log", root_cause="bad \x1b[31mred\x1b[0m & <tag> \x00")
    report = junit_report(
        [
            Outcome("a.log", nasty),
            Outcome("ok.log", no_match()),
            Outcome("b.log", error=ServiceUnavailable("b.log: down")),
            Outcome("c.log", error=QuotaExceeded("c.log: quota"), allowed=True),
        ]
    )

    root = ET.fromstring(report.encode())  # noqa: S314  (our own output)
    assert root.tag == "testsuites"
    assert root.attrib == {
        "name": "rootcause",
        "tests": "4",
        "failures": "1",
        "errors": "1",
        "skipped": "1",
    }
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["a.log", "ok.log", "b.log", "c.log"]
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("type") == "shape-mismatch"
    assert "Shape Mismatch" in failure.get("message", "")
    assert failure.text
    assert "& <tag>" in failure.text
    assert "\x1b" not in failure.text
    assert cases[1].find("failure") is None
    error = cases[2].find("error")
    assert error is not None
    assert error.get("type") == "outage"
    assert cases[3].find("skipped") is not None


def test_format_junit_and_json_from_the_command(runner, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    ok = tmp_path / "ok.log"
    ok.write_text("epoch 1 step 3 loss 0.1\n")

    junit = runner.invoke(
        rootcause.cli.app, ["diagnose", str(log), str(ok), "--offline", "--format", "junit"]
    )
    as_json = runner.invoke(
        rootcause.cli.app, ["diagnose", str(log), str(ok), "--offline", "--format", "json"]
    )

    assert junit.exit_code == as_json.exit_code == 1
    assert ET.fromstring(junit.stdout.encode()).get("failures") == "1"  # noqa: S314
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["file"], r["outcome"]) for r in rows] == [
        (str(log), "diagnosed"),
        (str(ok), "no_match"),
    ]
    # the typed result: it reads back as one
    failure = msgspec.convert(rows[0], type=FileResult).failure
    assert failure is not None
    assert failure.slug == "shape-mismatch"


def test_text_names_the_encyclopedia_page_on_the_service():
    from rootcause.cli.formats import render_text

    text = render_text(replace(diagnosed(), id="abc"), "https://rootcause.example.com")
    assert "more: https://rootcause.example.com/encyclopedia/shape-mismatch/" in text
    assert "id: abc" in text


# --- The diagnosis's page and repository-relative annotations ---------------------------------

LINK = "https://rootcause.example.com/diagnoses/0b1c/"


def test_annotations_carry_paths_relative_to_the_repository_and_the_page(tmp_path, monkeypatch):
    workspace = tmp_path / "repo"
    (workspace / "logs").mkdir(parents=True)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.chdir(workspace / "logs")
    absolute = str(workspace / "logs" / "train.log")
    outcomes = [
        Outcome(absolute, replace(diagnosed(absolute), link=LINK)),
        Outcome("rank1.log", replace(diagnosed("rank1.log"))),  # given relative to logs/
        Outcome("/elsewhere/x.log", diagnosed("/elsewhere/x.log", rank=3)),
    ]

    errors = [line for line in github_annotations(outcomes) if line.startswith("::error")]

    assert "file=logs/train.log,line=812" in errors[0]
    assert "Also in: logs/rank1.log" in errors[0]
    assert f"%0ADetails: {LINK}" in errors[0]
    assert "file=/elsewhere/x.log" in errors[1]  # outside the repository: as given


def test_the_text_json_and_summary_give_the_diagnosis_page():
    result = replace(diagnosed(), id="0b1c", link=LINK)

    assert f"page: {LINK}" in rootcause.cli.render_text(result)
    assert json.loads(msgspec.json.encode(result))["link"] == LINK
    summary = step_summary([Outcome("train.log", result)])
    assert f"[The diagnosis on rootcause]({LINK})" in summary
    assert "page:" not in rootcause.cli.render_text(diagnosed())  # offline: no page


def test_text_of_a_failure_outside_the_catalogue_names_the_rank_its_launcher_saw():
    from rootcause.cli.formats import render_text

    outside = replace(no_match(), initiating_rank=0)

    text = render_text(outside)
    assert "no known failure matched" in text
    assert "ranks:      Rank 0 most likely failed first" in text
    assert "ranks:" not in render_text(no_match())
