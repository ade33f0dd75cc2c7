"""The stated confidence is a calibrated probability (rootcause/engine/calibration.py)."""

import json
from pathlib import Path

from bench.calibrate import ROWS, Scored, fit, reliability, rows_of
from bench.eval import evaluate
from rootcause.confidence import CERTAIN, LIKELY, confidence_words
from rootcause.engine import get_engine
from rootcause.engine.calibration import TABLE, Calibration, calibrated, raw_scores, using

REALRUNS = Path(__file__).resolve().parents[2] / "bench" / "realruns" / "corpus"
REALRUNS_DEV = REALRUNS / "dev"
# the goal of issue 32, on the part of the run-produced corpus the table was not fitted on
SEALED_ECE_LIMIT = 0.05


def _rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines() if line]


def test_expected_calibration_error_on_the_committed_rows_is_at_most_five_points():
    rows = _rows()
    assert len(rows) > 300
    _, ece = reliability([calibrated(r["score"]) for r in rows], [r["right"] for r in rows])

    assert ece <= 0.05


def test_expected_calibration_error_on_the_sealed_part_is_at_most_five_points():
    # the measure of docs/accuracy.md: the stated confidence of every diagnosed log of
    # realruns/sealed against whether the class (and the labelled rank) was right; only the
    # figure is read here, as make eval does (nobody tunes the engine on these logs)
    report = evaluate(REALRUNS / "sealed", get_engine())

    assert report["diagnosed"] >= 20
    assert report["ece"] <= SEALED_ECE_LIMIT


def test_the_committed_rows_are_what_the_engine_says_today_on_the_in_repo_corpus():
    # the rows the ECE is held on must be the current engine's, not an old one's: the in-repo
    # corpus is re-diagnosed (refit with `python -m bench.calibrate` after engine changes)
    committed = {r["file"]: r for r in _rows() if r["corpus"] == "realruns/dev"}
    today = {r["file"]: r for r in rows_of("realruns/dev", REALRUNS_DEV, get_engine())}

    assert committed == today


def test_the_table_is_non_decreasing_and_fitted_on_development_corpora_only():
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    probabilities = [p["probability"] for p in data["points"]]

    assert probabilities == sorted(probabilities)
    assert not any("sealed" in name for name in data["fitted_on"])


def test_fit_pools_a_bin_that_is_right_less_often_than_the_one_below():
    right: Scored = {"corpus": "a", "score": 0.35, "right": True}
    wrong: Scored = {"corpus": "a", "score": 0.45, "right": False}
    rows = [right] * 8 + [wrong] * 8
    table = fit(rows, strength=0.0)

    assert table(0.35) == table(0.45) == 0.5


def test_raw_scores_block_gives_the_uncalibrated_figure():
    with raw_scores():
        assert calibrated(0.42) == 0.42
    assert calibrated(0.42) != 0.42


def test_words_beside_the_figure():
    assert confidence_words(CERTAIN) == "certain"
    assert confidence_words(LIKELY) == "likely"
    assert confidence_words(LIKELY - 0.01).startswith("possible — confirm")


def test_a_low_confidence_answer_says_what_would_decide_it():
    # a lone OOM line with nothing before it, under a table that measured such answers right
    # less than half the time: the answer says what would settle the class
    text = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    with using(Calibration((0.0, 1.0), (0.1, 0.5))):
        result = get_engine().diagnose([text])

    assert result.failure is not None
    assert result.failure.confidence < LIKELY
    assert any(f.startswith("what would decide it") for f in result.missing_facts)


def test_a_likely_answer_does_not_add_the_deciding_fact():
    text = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    with using(Calibration((0.0, 1.0), (0.95, 0.99))):
        result = get_engine().diagnose([text])

    assert not any(f.startswith("what would decide it") for f in result.missing_facts)
