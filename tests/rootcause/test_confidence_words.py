"""The confidence in words: one function builds them (rootcause.confidence), the engine writes
them into the result, and every output of the CLI says them beside the figure; a "possible"
answer always says what would decide it."""

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from rootcause.catalogue import load_entries
from rootcause.cli import diagnose_path
from rootcause.cli.formats import (
    github_annotations,
    junit_report,
    render_json,
    render_text,
    step_summary,
)
from rootcause.cli.results import FileResult, Outcome
from rootcause.confidence import (
    CERTAIN,
    LIKELY,
    confidence_level,
    confidence_words,
    stated,
    what_would_decide,
)
from rootcause.engine import get_engine
from rootcause.engine.calibration import Calibration, using
from rootcause.hangs import analyse, members, read_bundle
from rootcause.hangs.report import result_for
from rootcause.result import DiagnosisResult, Failure, failure_of

LOGS = Path(__file__).resolve().parents[1] / "logs"
BUNDLES = Path(__file__).parent / "hang_bundles"
LOW = Calibration((0.0, 1.0), (0.1, 0.5))  # every answer measured right under half the time
HIGH = Calibration((0.0, 1.0), (0.95, 0.99))
OOM_LINE = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
CHECKLIST = {e.slug: e.checklist for e in load_entries()}


@pytest.mark.parametrize(
    ("probability", "level"),
    [
        (0.99, "certain"),
        (CERTAIN, "certain"),
        (0.89, "likely"),
        (LIKELY, "likely"),
        (0.59, "possible"),
        (0.01, "possible"),
    ],
)
def test_three_levels_at_the_measured_boundaries(probability, level):
    assert confidence_level(probability) == level
    assert confidence_words(probability, "x").split(" ")[0] == level


def test_possible_names_what_would_decide_it():
    assert confidence_words(0.4, "rank 2's own output") == (
        "possible — confirm with rank 2's own output"
    )
    # nothing better known (a result stored before the words existed): the list below
    assert confidence_words(0.4) == "possible — confirm with what is missing (below)"
    # certain and likely carry no errand
    assert confidence_words(0.95, "rank 2's own output") == "certain"


def test_what_would_decide_prefers_the_silent_ranks_own_output_then_the_entrys_check():
    silent = what_would_decide(check="Read the port.", launcher_only=True, silent_rank=3)
    assert silent.startswith("rank 3's own output")
    assert "only the launcher reported it" in silent
    unnamed = what_would_decide(check="Read the port.", launcher_only=True)
    assert unnamed.startswith("the failed process's own output")
    assert what_would_decide(check="Read the port.") == "this check: Read the port"
    rivals = what_would_decide(check="Read the port.", rivals=["setup-oom", "eval-memory-growth"])
    assert rivals.endswith("; it tells this class from setup-oom, eval-memory-growth")
    assert what_would_decide().startswith("the full output of the failing process")


def test_stated_is_the_figure_with_the_results_words_or_words_made_from_the_figure():
    assert stated(0.42, "possible — confirm with rank 1's own output") == (
        "0.42 (possible — confirm with rank 1's own output)"
    )
    assert stated(0.93) == "0.93 (certain)"
    assert stated(0.42, None) == "0.42 (possible — confirm with what is missing (below))"


def test_failure_of_writes_level_and_words_into_the_result_type():
    failure = failure_of(slug="s", title="t", category="memory", confidence=0.3, confirm="c")

    assert failure.confidence_level == "possible"
    assert failure.confidence_words == "possible — confirm with c"


# -- the engine writes the words


def _words(result: DiagnosisResult) -> str:
    assert result.failure is not None
    assert isinstance(result.failure.confidence_words, str)
    return result.failure.confidence_words


def test_a_low_confidence_diagnosis_says_the_entrys_first_check_in_its_words():
    with using(LOW):
        result = get_engine().diagnose([OOM_LINE])

    assert result.failure is not None
    assert result.failure.confidence_level == "possible"
    first_check = CHECKLIST[result.failure.slug][0].rstrip(".")
    assert _words(result).startswith("possible — confirm with this check: ")
    assert first_check in _words(result)


def test_a_certain_diagnosis_says_certain():
    with using(HIGH):
        result = get_engine().diagnose([OOM_LINE])

    assert result.failure is not None
    assert (result.failure.confidence_level, result.failure.confidence_words) == (
        "certain",
        "certain",
    )


def test_a_rank_only_the_launcher_reported_is_confirmed_by_that_ranks_own_output():
    log = LOGS / "elastic-child-failed" / "torchrun_rank1_silent_exit3_rank0_collateral.log"
    with using(LOW):
        result = diagnose_path(str(log), get_engine())

    assert result.failure is not None
    assert result.initiating_rank == 1
    assert _words(result).startswith(
        "possible — confirm with rank 1's own output: its traceback or last lines"
    )


def test_a_class_proposed_by_likeness_is_confirmed_by_the_full_traceback():
    # no fingerprint names the waiting line; the barrier timeout's signature resembles it
    log = LOGS / "rendezvous-timeout" / "store_barrier_waiting_short_of_workers.log"
    with using(LOW):
        result = diagnose_path(str(log), get_engine())

    assert result.failure is not None
    assert "resembles" in (result.root_cause or "")
    assert _words(result).startswith(
        "possible — confirm with the full traceback of the failing process (no fingerprint "
        "matched: line "
    )


def test_a_hang_verdict_without_some_dumps_is_confirmed_by_those_dumps():
    files = [
        (n, d)
        for n, d in members((BUNDLES / "lock__0.tar.gz").read_bytes())
        if n != "fr_trace_rank1.json"
    ]
    section = analyse(read_bundle(files))
    section = replace(section, culprits=[replace(c, confidence=0.4) for c in section.culprits])
    result = result_for(section, masked={})

    assert result.failure is not None
    assert result.failure.confidence_words == (
        "possible — confirm with the dumps the bundle lacks (flight-recorder dump: rank 1)"
    )


# -- every output of the CLI says them beside the figure


def _low(file: str = "train.log") -> FileResult:
    with using(LOW):
        result = diagnose_path(
            str(LOGS / "elastic-child-failed" / "torchrun_rank1_silent_exit3_rank0_collateral.log"),
            get_engine(),
        )
    return replace(result, file=file)


def test_text_output_says_the_figure_and_the_words():
    result = _low()
    assert result.failure is not None
    text = render_text(result)

    assert (
        f"confidence: {result.failure.confidence:.2f} (possible — confirm with rank 1's own" in text
    )


def test_json_output_carries_level_and_words():
    failure = json.loads(render_json(_low()))["failure"]

    assert failure["confidence_level"] == "possible"
    assert failure["confidence_words"].startswith("possible — confirm with rank 1's own output")


def test_github_annotation_and_step_summary_say_the_words():
    outcomes = [Outcome("train.log", _low())]

    (annotation,) = [a for a in github_annotations(outcomes) if a.startswith("::error")]
    assert "%0AConfidence: " in annotation
    assert "(possible — confirm with rank 1's own output" in annotation
    summary = step_summary(outcomes)
    assert "confidence 0." in summary
    assert "(possible — confirm with rank 1's own output" in summary


def test_junit_failure_message_and_text_say_the_words():
    root = ET.fromstring(junit_report([Outcome("train.log", _low())]).encode())  # noqa: S314
    failure = root.find("testsuite/testcase/failure")

    assert failure is not None
    assert "confidence 0." in failure.get("message", "")
    assert "possible — confirm with rank 1's own output" in failure.get("message", "")
    assert "possible — confirm with rank 1's own output" in (failure.text or "")


def test_a_result_from_an_older_service_without_words_is_worded_from_its_figure():
    old = replace(_low(), failure=Failure(slug="s", title="T", category="memory", confidence=0.95))

    assert "confidence: 0.95 (certain)" in render_text(old)
