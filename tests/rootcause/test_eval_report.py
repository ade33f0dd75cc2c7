"""bench.eval's accounting: figures, the per-class table, the sealed corpus kept blind, and the
corpora found with and without ../shared. The engine's answers are given, so the figures are
known in advance."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import eval as bench_eval
from bench import hangs

ANSWERS = {
    "a.log": ("shape-mismatch", 1),  # right class, right rank
    "b.log": ("shape-mismatch", 0),  # right class, wrong rank
    "c.log": ("nan-loss", None),  # a healthy run flagged
    "d.log": (None, None),  # healthy, right
    "e.log": ("gloo-timeout", 2),  # wrong class (label: dtype-mismatch), rank named where null
}
LABELS = [
    {"file": "a.log", "slug": "shape-mismatch", "multi_rank": True, "initiating_rank": 1},
    {"file": "b.log", "slug": "shape-mismatch", "multi_rank": True, "initiating_rank": 2},
    {"file": "c.log", "slug": "none", "multi_rank": False, "initiating_rank": None},
    {"file": "d.log", "slug": "none", "multi_rank": True, "initiating_rank": None},
    {"file": "e.log", "slug": "dtype-mismatch", "multi_rank": True, "initiating_rank": None},
]


def fake_diagnose(path: str, engine: object) -> SimpleNamespace:
    slug, rank = ANSWERS[Path(path).name]
    failure = SimpleNamespace(slug=slug, confidence=0.9) if slug else None
    return SimpleNamespace(failure=failure, initiating_rank=rank)


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(bench_eval, "diagnose_path", fake_diagnose)
    for label in LABELS:
        (tmp_path / str(label["file"])).write_text("log\n")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in LABELS))
    return tmp_path


def test_figures_and_class_table(corpus: Path) -> None:
    report = bench_eval.evaluate(corpus, engine=None)  # type: ignore[arg-type]
    assert report["top1_count"] == 3  # a, b, d
    assert (report["rank_ok"], report["rank_files"]) == (1, 2)
    assert (report["multi_rank_ok"], report["multi_rank_files"]) == (2, 4)  # a and d
    assert (report["healthy_misdiagnosed"], report["healthy_files"]) == (1, 2)
    rows = {row["slug"]: row for row in report["classes"]}
    assert rows["shape-mismatch"]["correct"] == 2
    assert rows["none"]["confused_with"] == {"nan-loss": 1}
    assert rows["dtype-mismatch"]["recall"] == 0
    assert rows["dtype-mismatch"]["confused_with"] == {"gloo-timeout": 1}


def test_sealed_table_hides_what_misses_were_named(corpus: Path) -> None:
    report = bench_eval.evaluate(corpus, engine=None)  # type: ignore[arg-type]
    text = bench_eval.accuracy_markdown([("realruns/sealed", report)], None)
    assert "gloo-timeout" not in text
    assert "(sealed)" in text
    assert "gloo-timeout x1" in bench_eval.accuracy_markdown([("shared/dev", report)], None)
    # the second blind part (generate.py --round 2) is kept blind the same way
    text = bench_eval.accuracy_markdown([("realruns/sealed2", report)], None)
    assert "gloo-timeout" not in text
    assert "(sealed)" in text
    # and the third (generate.py --round 3's blind part), while its open part dev_r3 is not
    text = bench_eval.accuracy_markdown([("realruns/sealed3", report)], None)
    assert "gloo-timeout" not in text
    assert "gloo-timeout x1" in bench_eval.accuracy_markdown([("realruns/dev_r3", report)], None)
    # and the fourth (generate.py --round 6's blind half), while its open half dev_r6 is not
    text = bench_eval.accuracy_markdown([("realruns/sealed4", report)], None)
    assert "gloo-timeout" not in text
    assert "(sealed)" in text
    assert "gloo-timeout x1" in bench_eval.accuracy_markdown([("realruns/dev_r6", report)], None)
    # and the fifth (generate.py --round 8's blind half), while its open half dev_r8 is not
    text = bench_eval.accuracy_markdown([("realruns/sealed5", report)], None)
    assert "gloo-timeout" not in text
    assert "(sealed)" in text
    assert "gloo-timeout x1" in bench_eval.accuracy_markdown([("realruns/dev_r8", report)], None)
    # and the sixth (generate.py --round 10's blind half), while its open half dev_r10 is not
    text = bench_eval.accuracy_markdown([("realruns/sealed6", report)], None)
    assert "gloo-timeout" not in text
    assert "(sealed)" in text
    assert "gloo-timeout x1" in bench_eval.accuracy_markdown([("realruns/dev_r10", report)], None)


def test_without_shared_only_the_in_repo_corpora(tmp_path: Path) -> None:
    names = [name for name, _ in bench_eval.default_corpora(tmp_path / "absent")]
    # realruns/fresh: runs of one kind produced after the engine learnt it, scored apart;
    # realruns/sealed2: the second blind part (generate.py --round 2); dev_r3 and sealed3 are
    # round 3's open and blind parts, dev_r4 and dev_r5 rounds 4's and 5's open parts, dev_r6 and
    # sealed4 round 6's open and blind parts, dev_r7 round 7's (drawn as sealed2 was), dev_r8 and
    # sealed5 round 8's open and blind halves (drawn as sealed2 was), dev_r9 round 9's (open),
    # dev_r10 and sealed6 round 10's open and blind halves
    in_repo = [
        "realruns/dev",
        "realruns/dev_r3",
        "realruns/dev_r4",
        "realruns/dev_r5",
        "realruns/dev_r6",
        "realruns/dev_r7",
        "realruns/dev_r8",
        "realruns/dev_r9",
        "realruns/dev_r10",
        "realruns/sealed",
        "realruns/sealed2",
        "realruns/sealed3",
        "realruns/sealed4",
        "realruns/sealed5",
        "realruns/sealed6",
        "realruns/fresh",
    ]
    assert names == in_repo
    (tmp_path / "corpus" / "dev9").mkdir(parents=True)
    (tmp_path / "corpus" / "dev9" / "labels.jsonl").write_text("")
    (tmp_path / "corpus" / "notes").mkdir()
    names = [name for name, _ in bench_eval.default_corpora(tmp_path)]
    assert names == ["shared/dev9", *in_repo]


def test_out_of_taxonomy_logs_are_apart_from_top1_and_ece_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {
        "x.log": ("shape-mismatch", None),
        "y.log": (None, None),
        "z.log": ("nan-loss", None),
    }
    labels = [
        {"file": "x.log", "slug": "out_of_taxonomy", "initiating_rank": None},
        {"file": "y.log", "slug": "out_of_taxonomy", "initiating_rank": None},
        {"file": "z.log", "slug": "nan-loss", "initiating_rank": None},
    ]

    def diagnose(path: str, engine: object) -> SimpleNamespace:
        slug, rank = answers[Path(path).name]
        failure = SimpleNamespace(slug=slug, confidence=0.8) if slug else None
        return SimpleNamespace(failure=failure, initiating_rank=rank)

    monkeypatch.setattr(bench_eval, "diagnose_path", diagnose)
    for label in labels:
        (tmp_path / str(label["file"])).write_text("log\n")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))

    report = bench_eval.evaluate(tmp_path, engine=None)  # type: ignore[arg-type]

    assert (report["top1_count"], report["in_taxonomy"]) == (1, 1)
    assert (report["out_of_taxonomy_named"], report["out_of_taxonomy"]) == (1, 2)
    # two diagnosed at 0.8: one right (z), one wrong (x): |0.8 - 0.5|
    assert report["ece"] == pytest.approx(0.3)


def test_hang_table_puts_fr_trace_beside_ours_and_the_logs_alone(corpus: Path) -> None:
    report = bench_eval.evaluate(corpus, engine=None)  # type: ignore[arg-type]
    ran = {"all dumps": 6, "no dumps": 3, "--allow-incomplete-ranks": 1}
    dev = hangs.Figures(bundles=10, verdict=9, culprit=10, verdict_missing=8, culprit_missing=9,
                        logs_verdict=2, logs_culprit=5, healthy=1, healthy_flagged=0,
                        fr_culprit=4, fr_culprit_missing=3, fr_ran=ran, fr_fair=[6, 3, 6])  # fmt: skip
    sealed = hangs.Figures(bundles=5, verdict=5, culprit=4, verdict_missing=5, culprit_missing=4,
                           logs_verdict=1, logs_culprit=2, healthy=0, healthy_flagged=0)  # fmt: skip
    text = bench_eval.accuracy_markdown(
        [("shared/dev", report)], None, [("dev", dev), ("sealed", sealed)]
    )
    row = next(line for line in text.splitlines() if line.startswith("| dev | 10 |"))
    assert row == (
        "| dev | 10 | 90.0 % (9/10) | 100.0 % (10/10) | 80.0 % (8/10) / 90.0 % (9/10)"
        " | 40.0 % (4/10) | 30.0 % (3/10) | 20.0 % (2/10) / 50.0 % (5/10) |"
    )
    assert "| sealed | 5 | 100.0 % (5/5) | 80.0 % (4/5) |" in text
    assert "| not run | not run |" in text  # sealed without torch: said, not a zero
    assert "dev: 1 --allow-incomplete-ranks, 6 all dumps, 3 no dumps; on the 6 bundles" in text
    assert "fr_trace 3 right, rootcause 6" in text


def test_the_parts_still_blind_are_pooled_apart_from_those_read(corpus: Path) -> None:
    # realruns/sealed and sealed2 have had their misses read: the blind pool is sealed3-5 only
    report = bench_eval.evaluate(corpus, engine=None)  # type: ignore[arg-type]
    reports = [(f"realruns/{part}", report) for part in ("sealed2", "sealed3", "sealed4")]
    line = bench_eval.blind_pool_line(reports)
    assert line is not None
    assert "top-1 60.0% (6/10)" in line
    assert "initiating rank 50.0% (2/4)" in line
    assert "healthy flagged 2 of 4" in line
    assert bench_eval.blind_pool_line(reports[:2]) is None


def test_beside_the_rank_figure_the_one_over_logs_that_can_decide_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run-produced label (it names a launcher) of a two-rank collective mismatch under torchrun:
    # both ranks raise mirrored reports, so its rank is left out of the second figure by its
    # scenario's name; under spawn, with three ranks, or in a public log it stays in
    mirrored = "run-collective-mismatch__torchrun-tee_w2_rank0_numel_step2.log"
    spawn = "run-collective-mismatch__spawn_w2_rank1_op.log"
    three = "run-collective-mismatch__mp_w3_rank2_numel_step3.log"
    public = "gh-collective-mismatch__x-1.log"
    # the engine's answers: no rank for the mirrored pair, the labelled rank for the others
    answers: dict[str, int | None] = {mirrored: None, spawn: 1, three: 2, public: 0}
    launchers = {mirrored: "torchrun-tee", spawn: "spawn", three: "mp"}
    labels: list[dict[str, object]] = []
    for file, rank in ((mirrored, 0), (spawn, 1), (three, 2), (public, 0)):
        label: dict[str, object] = {"file": file, "slug": "collective-mismatch"}
        label |= {"multi_rank": True, "initiating_rank": rank}
        if file in launchers:
            label["launcher"] = launchers[file]
        labels.append(label)
        (tmp_path / file).write_text("log\n")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))

    def diagnose(path: str, engine: object) -> SimpleNamespace:
        failure = SimpleNamespace(slug="collective-mismatch", confidence=0.9)
        return SimpleNamespace(failure=failure, initiating_rank=answers[Path(path).name])

    monkeypatch.setattr(bench_eval, "diagnose_path", diagnose)
    report = bench_eval.evaluate(tmp_path, engine=None)  # type: ignore[arg-type]

    assert (report["rank_ok"], report["rank_files"]) == (3, 4)  # the headline: every rank
    assert (report["decidable_rank_ok"], report["decidable_rank_files"]) == (3, 3)
    lines = bench_eval.summary_lines("realruns/dev_r9", report)
    assert "  initiating-rank accuracy: 75.0% over 4 files whose label names a rank" in lines
    assert (
        "    where the log can decide it: 100.0% (3/3; left out: 1 two-rank mirrored collective"
        " mismatches)" in lines
    )
    text = bench_eval.accuracy_markdown([("realruns/dev_r9", report)], None)
    assert "| realruns/dev_r9 | 75.0% (3/4) | 100.0% (3/3; left out: 1 two-rank" in text
    # a corpus without such logs gets no second figure
    report |= {"decidable_rank_files": 4, "decidable_rank_ok": 3}
    assert not any("can decide" in line for line in bench_eval.summary_lines("x", report))
    assert "where the log can decide it |" not in bench_eval.accuracy_markdown(
        [("x", report)], None
    )
