"""The stated confidence is a calibrated probability (rootcause/engine/calibration.py)."""

import json
from pathlib import Path

from bench.calibrate import (
    ROWS,
    STRENGTHS,
    Scored,
    choose_kind_strength,
    first_look_prior,
    first_look_rows,
    fit,
    fit_kinds,
    pooled_ece,
    reliability,
    rows_of,
)
from bench.eval import evaluate
from rootcause.confidence import CERTAIN, LIKELY, confidence_words
from rootcause.engine import get_engine
from rootcause.engine.calibration import (
    ALIKE,
    INFERRED,
    NOT_SINGLED_OUT,
    ONE_PROCESS,
    OWN_ERROR,
    PROPOSED,
    TABLE,
    Calibration,
    answer_kind,
    calibrated,
    raw_scores,
    recording,
    using,
)
from rootcause.ranks import Basis, FirstError, rank_answer
from rootcause.ranks import CrossRankEvidence as Ev

REALRUNS = Path(__file__).resolve().parents[2] / "bench" / "realruns" / "corpus"
REALRUNS_DEV = REALRUNS / "dev"
# the goal of issue 32, on the part of the run-produced corpus the table was not fitted on
SEALED_ECE_LIMIT = 0.05
SEALED_PARTS = ("sealed", "sealed2", "sealed3", "sealed4", "sealed5", "sealed6")


def _rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines() if line]


def test_expected_calibration_error_on_the_committed_rows_is_at_most_five_points():
    rows = _rows()
    assert len(rows) > 300
    _, ece = reliability(
        [calibrated(r["score"], r["kind"]) for r in rows], [r["right"] for r in rows]
    )

    assert ece <= 0.05


def test_expected_calibration_error_on_the_sealed_parts_is_at_most_five_points():
    # the measure of docs/accuracy.md: the stated confidence of every diagnosed log of the
    # sealed parts (realruns/sealed, sealed2, sealed3-sealed6; sealed and sealed2 are no
    # longer blind, their misses read) against whether the class (and the labelled rank) was
    # right, taken together: a part of 18-42 logs moves by 0.02-0.05 with one answer. Only the figures are read here, as make eval does (nobody tunes on these logs).
    engine = get_engine()
    reports = [evaluate(REALRUNS / part, engine) for part in SEALED_PARTS]

    assert sum(r["diagnosed"] for r in reports) >= 100
    assert pooled_ece([r["reliability"] for r in reports]) <= SEALED_ECE_LIMIT


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
    right: Scored = {"corpus": "a", "score": 0.35, "right": True, "kind": ""}
    wrong: Scored = {"corpus": "a", "score": 0.45, "right": False, "kind": ""}
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


def test_expected_calibration_error_on_the_first_look_rows_is_at_most_five_points():
    # issue 32: sealed2 and sealed3 found the stated confidence too high on run-produced
    # multi-rank logs the engine had not seen; the rows scored on arrival (realruns/dev_r3's and
    # dev_r4's first looks, before the engine learnt from them) are the nearest thing to such
    # logs in the open (dev_r5's too), and the multi-rank tables are fitted on them
    rows = first_look_rows()
    assert len({r["corpus"] for r in rows}) >= 3
    assert sum(r["kind"] not in (ONE_PROCESS, PROPOSED) for r in rows) >= 80
    assert not all(r["right"] for r in rows)
    _, ece = reliability(
        [calibrated(r["score"], r["kind"]) for r in rows], [r["right"] for r in rows]
    )

    assert ece <= 0.05


def test_multi_rank_kinds_are_fitted_on_first_looks_only():
    # a corpus the rank rules were written from is right on every multi-rank log; a first look
    # is right less often, and it alone decides the multi-rank tables
    built = [_scored(c, k, True) for c in "xyz" for k in (OWN_ERROR, INFERRED) for _ in range(40)]
    first = [_scored("new", OWN_ERROR, i % 4 != 0) for i in range(20)]
    first += [_scored("new", INFERRED, i % 2 == 0) for i in range(4)]
    first += [_scored("new", ONE_PROCESS, True) for _ in range(10)]
    every, kinds = fit_kinds(built + first, 5.0, frozenset({"new"}))

    assert abs(kinds[OWN_ERROR][0](0.97) - 0.75) < 0.1
    assert kinds[OWN_ERROR][2] == 20
    # a kind with too few first-look rows takes every first-look multi-rank row (17 of 24 right)
    assert kinds[INFERRED][2] == 24
    assert abs(kinds[INFERRED][0](0.97) - 17 / 24) < 0.1
    assert every(0.97) > 0.9
    # without first looks, as before: each kind on its own rows
    _, plain = fit_kinds(built + first, 5.0)
    assert plain[OWN_ERROR][2] == 140


def test_a_corpus_scored_on_arrival_is_fitted_from_its_first_look():
    first = first_look_rows()
    assert {f"realruns/dev_r{n}" for n in (3, 4, 5, 6, 7)} <= {r["corpus"] for r in first}
    assert all(r["engine"] and "sealed" not in r["corpus"] for r in first)
    looked = {r["corpus"] for r in first}
    fitted = [r for r in _rows() if r["corpus"] in looked]
    assert sorted(fitted, key=lambda r: (r["corpus"], r["file"])) == sorted(
        first, key=lambda r: (r["corpus"], r["file"])
    )
    # its misses are still in the rows, though today's engine gets some of them right
    assert not all(r["right"] for r in fitted)


def test_each_kind_of_multi_rank_answer_has_a_table_and_the_engine_says_which():
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    assert {OWN_ERROR, INFERRED} <= set(data["kinds"])
    # one process (no rank question) keeps the table of all kinds
    assert ONE_PROCESS not in data["kinds"]
    log = Path(__file__).with_name("runs") / "torchrun_rank0_sigsegv_rank1_lost_peer.log"
    with recording() as seen:
        result = get_engine().diagnose([log.read_text(encoding="utf-8")])
    assert result.initiating_rank == 0
    assert seen[-1][1] == INFERRED
    with recording() as seen:
        get_engine().diagnose(["RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"])
    assert seen[-1][1] == ONE_PROCESS


def test_answer_kinds_follow_what_the_rank_rests_on():
    assert answer_kind(multi=False, rank=None, basis=Basis.ONE_PROCESS) == ONE_PROCESS
    assert answer_kind(multi=True, rank=None, basis=Basis.ALIKE) == ALIKE
    assert answer_kind(multi=True, rank=None, basis=Basis.NOT_SINGLED_OUT) == NOT_SINGLED_OUT
    assert answer_kind(multi=True, rank=1, basis=Basis.ONLY_RAISER) == OWN_ERROR
    assert answer_kind(multi=True, rank=1, basis=Basis.FIRST_RAISER) == OWN_ERROR
    for basis in (
        Basis.CROSS_RANK,
        Basis.CRASH_SIGNAL,
        Basis.SILENT,
        Basis.QUIET_EXIT,
        Basis.LAUNCHER,
    ):
        assert answer_kind(multi=True, rank=2, basis=basis) == INFERRED, basis


def test_the_rank_rules_set_the_basis_not_the_reasons_wording():
    def fe(line: int, text: str = "RuntimeError: boom") -> FirstError:
        return FirstError(ts=None, order=(0, line), line=line, text=text)

    only = rank_answer(root_errors={1: fe(3)}, collateral_errors={0: fe(5)}, evidence=Ev())
    assert (only.rank, only.basis) == (1, Basis.ONLY_RAISER)
    alike = rank_answer(root_errors={0: fe(1), 1: fe(2)}, collateral_errors={}, evidence=Ev())
    assert (alike.rank, alike.basis) == (None, Basis.ALIKE)
    silent = rank_answer(
        root_errors={}, collateral_errors={0: fe(1), 2: fe(2)}, evidence=Ev(), ranks_seen={0, 1, 2}
    )
    assert (silent.rank, silent.basis) == (1, Basis.SILENT)
    crashed = Ev(crashed={0, 1})
    both = rank_answer(root_errors={}, collateral_errors={2: fe(4)}, evidence=crashed)
    assert (both.rank, both.basis) == (None, Basis.ALIKE)
    launcher = Ev(launcher_root=3)
    alone = rank_answer(root_errors={}, collateral_errors={}, evidence=launcher)
    assert (alone.rank, alone.basis) == (3, Basis.LAUNCHER)
    nothing = rank_answer(root_errors={}, collateral_errors={}, evidence=Ev())
    assert (nothing.rank, nothing.basis) == (None, Basis.NOT_SINGLED_OUT)
    # the kind no longer hangs on words: a reason that mentions a crash is not "alike" by it
    assert answer_kind(multi=True, rank=None, basis=nothing.basis) == NOT_SINGLED_OUT


def _scored(corpus: str, kind: str, right: bool, score: float = 0.97) -> Scored:
    return {"corpus": corpus, "score": score, "right": right, "kind": kind}


def test_a_kind_right_less_often_gets_a_lower_table_of_its_own():
    rows = [_scored(c, "a", True) for c in "xyz" for _ in range(30)]
    rows += [_scored(c, "b", i % 3 != 0) for c in "xyz" for i in range(9)]
    every, kinds = fit_kinds(rows, 5.0)

    assert kinds["b"][0](0.97) < every(0.97) < kinds["a"][0](0.97)
    assert abs(kinds["b"][0](0.97) - 2 / 3) < 0.15


def test_one_corpus_holding_every_miss_of_a_kind_takes_the_weakest_prior():
    # leaving that corpus out leaves no miss to learn from: the fold cannot choose
    rows = [_scored(c, "k", True) for c in "xy" for _ in range(10)]
    rows += [_scored("z", "k", i % 2 == 0) for i in range(6)]

    assert choose_kind_strength(rows, "k", 5.0) == STRENGTHS[0]


def test_below_a_kinds_lowest_score_the_table_of_all_kinds_speaks():
    # a kind fitted on a few first looks, all at high scores, does not hold its lowest bin flat
    # down to weak evidence: there the table of all kinds (here 0.3 at 0.3) decides
    base = Calibration((0.3, 0.97), (0.3, 0.95))
    rows = [_scored("new", INFERRED, True, score=0.97) for _ in range(10)]
    table = fit(rows, 5.0, base)

    assert table(0.3) == 0.3
    assert table(0.97) > 0.95


def test_a_multi_rank_kind_is_shrunk_towards_the_first_looks_own_rate():
    # the table of all kinds is fitted mostly on logs the engine was written from (right ~0.99);
    # a multi-rank kind's few first-look rows are shrunk towards what the first looks measured
    # (here 40 of 50 right), not towards that table
    built = [_scored(c, OWN_ERROR, True) for c in "xyz" for _ in range(200)]
    first = [_scored(c, OWN_ERROR, i % 4 != 0) for c in ("r1", "r2") for i in range(20)]
    first += [_scored(c, INFERRED, True) for c in ("r1", "r2") for _ in range(5)]
    every, kinds = fit_kinds(built + first, 5.0, frozenset({"r1", "r2"}))

    assert every(0.97) > 0.97
    assert kinds[INFERRED][2] == 10
    # ten right of ten, shrunk towards 0.8: below the table of all kinds, above the first looks
    assert 0.8 < kinds[INFERRED][0](0.97) < 0.95
    assert abs(kinds[OWN_ERROR][0](0.97) - 0.75) < 0.06


def test_the_first_look_prior_is_never_above_the_table_of_all_kinds():
    # weak evidence is no surer for being multi-rank: below the first looks' rate the prior
    # follows the table of all kinds
    every = Calibration((0.3, 0.6, 0.97), (0.3, 0.7, 0.99))
    rows = [_scored("r1", OWN_ERROR, i % 10 != 0) for i in range(30)]
    prior = first_look_prior(rows, every)

    assert prior(0.3) == 0.3
    assert prior(0.6) == 0.7
    assert abs(prior(0.97) - 0.9) < 1e-9
