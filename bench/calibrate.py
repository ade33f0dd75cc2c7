"""Fit the confidence calibration (rootcause/engine/calibration.json) on the development corpora.

`python -m bench.calibrate --shared ../shared` diagnoses every log of ../shared/corpus/{dev,dev2,
dev3} and bench/realruns/corpus/{dev,dev_r3,...,dev_r10} with raw evidence scores, records
for each diagnosed log its score, the kind of answer (rootcause.engine.calibration.answer_kind,
from what the rank inference says its answer rests on, rootcause.ranks.Basis: one process,
several ranks and none named, a rank named by its own error or by inference) and whether
the diagnosis was right (the class, and the initiating rank where the label names one; a class
named for an out-of-taxonomy log is wrong), writes those rows to bench/calibration_rows.jsonl
(the test holds the expected calibration error on them) and the fitted tables to
calibration.json. No sealed part is ever read here.

A corpus the engine then learns from stops measuring how often it is right on logs it has not
seen: today's engine is right on nearly every development log by construction. So a new corpus
is scored once on arrival, before any change learnt from it (`--first-look realruns/dev_r3`
writes its rows to bench/calibration_first_look.jsonl with the commit), and the fit takes those
first-look rows for it instead of today's: they are what an unseen log of that kind gets.

The fit: the scores are cut into fixed bins; each bin's rate of right answers is shrunk towards
the bin's mean score by a prior of `strength` pseudo-observations (few logs in a bin say little),
the strength chosen among STRENGTHS (at least 5: these corpora are the ones the signals were
written from) by leaving one corpus out (the one that minimises the squared error on the left-out
corpus), and the bins are then made non-decreasing (pool adjacent violators). Then, per kind of
a multi-rank answer with at least MIN_KIND_ROWS logs, a table of its own fitted the same way on
that kind's logs, except that each bin is shrunk towards the table of all kinds (at the
bin's mean score) rather than towards the score itself, its strength also chosen by leaving one
corpus out (refitting the table of all kinds without that corpus too) where that can tell.

The multi-rank kinds' tables are fitted on first-look rows only (realruns/dev_r3's to dev_r10's): on
every other corpus the rank rules were written from those very logs, so a rank named there is right
by construction (~100 %), while run-produced logs the engine had not seen got ~88-95 % (the blind
sealed2 and sealed3 said the same). A multi-rank kind with fewer than MIN_KIND_ROWS first-look rows
takes the table of every first-look multi-rank row. Each bin of those tables is shrunk towards the
first looks' own rate of right multi-rank answers (capped by the table of all kinds,
first_look_prior), not towards the table of all kinds, which states ~0.98 at high scores because it
is fitted mostly on logs the engine was written from; the strength is chosen among STRENGTHS by
leaving one first look out. The table of all kinds, which one process and proposed answers keep, is
fitted on every row as before.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from rootcause.cli import InputError, diagnose_path
from rootcause.engine import Engine, get_engine
from rootcause.engine.calibration import (
    ONE_PROCESS,
    PROPOSED,
    TABLE,
    Calibration,
    raw_scores,
    recording,
)

ROOT = Path(__file__).resolve().parent.parent
ROWS = Path(__file__).with_name("calibration_rows.jsonl")
FIRST_LOOK = Path(__file__).with_name("calibration_first_look.jsonl")
FIT_CORPORA = ("dev", "dev2", "dev3")
EDGES = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01)
# At least 5 pseudo-observations: the development corpora are the ones the signals were written
# from, so a bin of a few weak-evidence logs there is right by construction, not by measure (with
# no prior, a lone driver line or a class proposed by likeness was stated certain)
STRENGTHS = (5.0, 10.0, 20.0, 50.0)
# a kind of answer with fewer diagnosed logs than this takes the table of all kinds (above it the
# prior, at least 5 pseudo-observations at the table of all kinds, keeps a small kind near it)
MIN_KIND_ROWS = 8
RUN_PRODUCED = (
    "dev",
    "dev_r3",
    "dev_r4",
    "dev_r5",
    "dev_r6",
    "dev_r7",
    "dev_r8",
    "dev_r9",
    "dev_r10",
)
# Kinds without a rank question keep the table of all kinds: most rows are theirs, and their few
# weak-evidence logs (a lone driver line, at a score near 0.4) were right in these corpora by
# construction; a table of their own, shrunk towards the table of all kinds, stated them certain
ONE_TABLE = {ONE_PROCESS, PROPOSED}
OUT_OF_TAXONOMY = "out_of_taxonomy"


class Scored(TypedDict):
    """What the fit reads of a diagnosed log: its corpus, raw score and whether it was right."""

    corpus: str
    score: float
    right: bool
    kind: str


class Row(Scored):
    """A diagnosed log of calibration_rows.jsonl."""

    file: str


class FirstLook(Row):
    """A row of calibration_first_look.jsonl: with the engine's commit that scored it."""

    engine: str


def rows_of(name: str, corpus: Path, engine: Engine) -> list[Row]:
    """One row per diagnosed log: its raw evidence score and whether the diagnosis was right."""
    rows: list[Row] = []
    for line in (corpus / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label = json.loads(line)
        try:
            with raw_scores(), recording() as seen:
                result = diagnose_path(str(corpus / label["file"]), engine)
        except InputError:
            continue
        if result.failure is None:
            continue
        rank = label.get("initiating_rank")
        right = result.failure.slug == label["slug"] and (
            rank is None or result.initiating_rank == rank
        )
        rows.append(
            {
                "corpus": name,
                "file": label["file"],
                "score": result.failure.confidence,
                "right": right,
                "kind": seen[-1][1] if seen else "",
            }
        )
    return rows


def fit(rows: Sequence[Scored], strength: float, base: Calibration | None = None) -> Calibration:
    """The table: each bin's rate shrunk towards `base` at the bin's mean score (without a base,
    towards the mean score itself), with `base`'s own points beyond the rows' scores, then made
    non-decreasing."""
    bins: list[tuple[float, float, int]] = []  # (mean score, shrunk rate, weight)
    for lo, hi in itertools.pairwise(EDGES):
        inside = [r for r in rows if lo <= r["score"] < hi]
        if not inside:
            continue
        mean = sum(r["score"] for r in inside) / len(inside)
        right = sum(r["right"] for r in inside)
        prior = base(mean) if base is not None else mean
        rate = (right + strength * prior) / (len(inside) + strength)
        bins.append((mean, rate, len(inside)))
    if base is not None and rows:
        # outside the scores the kind's own logs reach, the table of all kinds speaks (a kind
        # fitted on a few first looks would otherwise hold its lowest bin flat down to 0)
        low, high = min(r["score"] for r in rows), max(r["score"] for r in rows)
        bins += [
            (x, y, max(1, round(strength)))
            for x, y in zip(base.scores, base.probabilities, strict=True)
            if x < low or x > high
        ]
        bins.sort()
    # pool adjacent violators: a higher score never means a lower probability
    pooled: list[list[float]] = []
    for mean, rate, weight in bins:
        pooled.append([mean, rate, float(weight), mean, mean])
        while len(pooled) > 1 and pooled[-2][1] > pooled[-1][1]:
            b = pooled.pop()
            a = pooled[-1]
            total = a[2] + b[2]
            a[1] = (a[1] * a[2] + b[1] * b[2]) / total
            a[2] = total
            a[4] = b[4]
    points: list[tuple[float, float]] = []
    for _, rate, _, first, last in pooled:
        points.append((round(first, 3), round(rate, 3)))
        if last > first:
            points.append((round(last, 3), round(rate, 3)))
    return Calibration(tuple(p[0] for p in points), tuple(p[1] for p in points))


def brier(table: Calibration, rows: Sequence[Scored]) -> float:
    return sum((table(r["score"]) - r["right"]) ** 2 for r in rows) / max(1, len(rows))


def choose_strength(rows: Sequence[Scored]) -> float:
    corpora = sorted({r["corpus"] for r in rows})

    def held_out_error(strength: float) -> float:
        total = 0.0
        for left_out in corpora:
            table = fit([r for r in rows if r["corpus"] != left_out], strength)
            total += brier(table, [r for r in rows if r["corpus"] == left_out])
        return total / len(corpora)

    return min(STRENGTHS, key=held_out_error)


def kind_rows(rows: Sequence[Scored], kind: str, looked: frozenset[str]) -> list[Scored]:
    """The rows a kind's table is fitted on: without first looks, the kind's rows; with them, a
    multi-rank kind's first-look rows, or every first-look multi-rank row when the kind has fewer
    than MIN_KIND_ROWS (an engine built from a log says nothing of how often it is right on an
    unseen one)."""
    if not looked:
        return [r for r in rows if r["kind"] == kind]
    first = [r for r in rows if r["corpus"] in looked and r["kind"] not in ONE_TABLE]
    of_kind = [r for r in first if r["kind"] == kind]
    return of_kind if len(of_kind) >= MIN_KIND_ROWS else first


def first_look_prior(rows: Sequence[Scored], every: Calibration) -> Calibration:
    """The prior of the multi-rank kinds' tables with first looks: the rate of right answers of
    every first-look multi-rank row (in `rows`), but never above the table of all kinds (weak
    evidence is no surer for being multi-rank). The table of all kinds is fitted mostly on logs
    the engine was written from and states ~0.98 at high scores; an unseen multi-rank log is
    right less often, which is what the first looks measure."""
    first = [r for r in rows if r["kind"] not in ONE_TABLE]
    if not first:
        return every
    rate = sum(r["right"] for r in first) / len(first)
    return Calibration(every.scores, tuple(min(p, rate) for p in every.probabilities))


def _kind_base(rows: Sequence[Scored], every: Calibration, looked: frozenset[str]) -> Calibration:
    """What a kind's bins are shrunk towards: the table of all kinds, or with first looks the
    first-look prior (first_look_prior on `looked`'s rows)."""
    if not looked:
        return every
    return first_look_prior([r for r in rows if r["corpus"] in looked], every)


def choose_kind_strength(
    rows: Sequence[Scored], kind: str, strength: float, looked: frozenset[str] = frozenset()
) -> float:
    """The prior strength of one kind's table, by leaving one corpus out: the table of all kinds,
    the prior and the kind's own table are refitted without it and scored on its logs of that
    kind. A corpus counts only when both what is left and what is left out hold a wrong answer of
    the kind: otherwise the fold says nothing about how far the kind's own rate should move (one
    corpus holding every miss of a kind would always ask for the strongest prior). Without such
    a corpus the weakest prior, STRENGTHS[0], is taken: the kind's own logs decide. With first
    looks (`looked`), the kind's rows are kind_rows', so the folds are the first-look corpora:
    fitted on the other rounds' first looks, scored on the one left out."""
    of_kind = kind_rows(rows, kind, looked)
    wrong_in = {r["corpus"] for r in of_kind if not r["right"]}
    corpora = [c for c in sorted(wrong_in) if wrong_in - {c}]
    if not corpora:
        return STRENGTHS[0]

    def held_out_error(kind_strength: float) -> float:
        total = 0.0
        for left_out in corpora:
            kept = [r for r in rows if r["corpus"] != left_out]
            base = _kind_base(kept, fit(kept, strength), looked - {left_out})
            table = fit([r for r in of_kind if r["corpus"] != left_out], kind_strength, base)
            total += brier(table, [r for r in of_kind if r["corpus"] == left_out])
        return total / len(corpora)

    return min(STRENGTHS, key=held_out_error)


def fit_kinds(
    rows: Sequence[Scored], strength: float, looked: frozenset[str] = frozenset()
) -> tuple[Calibration, dict[str, tuple[Calibration, float, int]]]:
    """The table of all kinds, and per kind with MIN_KIND_ROWS logs (table, strength, logs); with
    first looks (`looked`, the corpora whose rows are theirs), every multi-rank kind seen gets a
    table fitted on first-look rows (kind_rows), shrunk towards the first-look prior."""
    every = fit(rows, strength)
    base = _kind_base(rows, every, looked)
    kinds: dict[str, tuple[Calibration, float, int]] = {}
    for kind in sorted({r["kind"] for r in rows} - ONE_TABLE):
        of_kind = kind_rows(rows, kind, looked)
        if len(of_kind) < MIN_KIND_ROWS:
            continue
        kind_strength = choose_kind_strength(rows, kind, strength, looked)
        kinds[kind] = (fit(of_kind, kind_strength, base), kind_strength, len(of_kind))
    return every, kinds


def stated(
    every: Calibration, kinds: dict[str, tuple[Calibration, float, int]], row: Scored
) -> float:
    """What the fitted tables state for a row (as calibration.calibrated would, unrounded)."""
    table = kinds[row["kind"]][0] if row["kind"] in kinds else every
    return min(max(table(row["score"]), 0.01), 0.99)


def held_out_ece(
    rows: Sequence[Scored], left_out: str, looked: frozenset[str] = frozenset()
) -> float:
    """The expected calibration error on one corpus of tables fitted without it."""
    kept = [r for r in rows if r["corpus"] != left_out]
    every, kinds = fit_kinds(kept, choose_strength(kept), looked - {left_out})
    out = [r for r in rows if r["corpus"] == left_out]
    return reliability([stated(every, kinds, r) for r in out], [r["right"] for r in out])[1]


def reliability(
    probabilities: list[float], rights: list[bool]
) -> tuple[list[tuple[str, int, float, float]], float]:
    """Per decile of the stated probability: (range, count, mean stated, rate right), and the
    expected calibration error (the count-weighted mean gap between the two)."""
    table = []
    gap = 0.0
    for d in range(10):
        lo, hi = d / 10, (d + 1) / 10
        inside = [
            (p, ok)
            for p, ok in zip(probabilities, rights, strict=True)
            if lo <= p < hi or (d == 9 and p == 1.0)
        ]
        if not inside:
            continue
        stated = sum(p for p, _ in inside) / len(inside)
        rate = sum(ok for _, ok in inside) / len(inside)
        gap += len(inside) * abs(stated - rate)
        table.append((f"{lo:.1f}-{hi:.1f}", len(inside), stated, rate))
    return table, gap / max(1, len(probabilities))


def pooled_ece(tables: list[list[tuple[str, int, float, float]]]) -> float:
    """The expected calibration error of several corpora taken as one, from their `reliability`
    tables (the deciles' counts, mean stated and rate right add up)."""
    pool: dict[str, tuple[int, float, float]] = {}
    for table in tables:
        for span, n, stated, rate in table:
            count, stated_sum, right_sum = pool.get(span, (0, 0.0, 0.0))
            pool[span] = (count + n, stated_sum + n * stated, right_sum + n * rate)
    total = sum(count for count, _, _ in pool.values())
    return sum(abs(s - r) for _, s, r in pool.values()) / max(1, total)


def first_look_rows(path: Path = FIRST_LOOK) -> list[FirstLook]:
    """The committed first-look rows: corpora scored on arrival, before the engine learnt them."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def record_first_look(name: str, corpus: Path, engine: Engine, commit: str) -> int:
    """Score `corpus` with today's engine as its first look, replacing its earlier rows."""
    kept = [r for r in first_look_rows() if r["corpus"] != name]
    new: list[FirstLook] = [{**r, "engine": commit} for r in rows_of(name, corpus, engine)]
    FIRST_LOOK.write_text("".join(json.dumps(r) + "\n" for r in kept + new), encoding="utf-8")
    return len(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument(
        "--first-look",
        metavar="NAME",
        help="score one development corpus (e.g. realruns/dev_r3) on arrival, before the engine"
        f" learns from it, into {FIRST_LOOK.name}; no fit",
    )
    args = parser.parse_args(argv)
    engine = get_engine()
    corpora = [(f"shared/{n}", args.shared / "corpus" / n) for n in FIT_CORPORA]
    corpora += [
        (f"realruns/{part}", ROOT / "bench" / "realruns" / "corpus" / part) for part in RUN_PRODUCED
    ]
    missing = [name for name, path in corpora if not (path / "labels.jsonl").is_file()]
    if missing:
        print(f"error: the fit needs every development corpus; missing {missing}", file=sys.stderr)
        return 2
    if args.first_look:
        where = dict(corpora).get(args.first_look)
        if where is None:
            print(f"error: {args.first_look} is not a development corpus", file=sys.stderr)
            return 2
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        n = record_first_look(args.first_look, where, engine, commit)
        print(f"{args.first_look}: {n} diagnosed logs scored as its first look (engine {commit})")
        return 0
    first = first_look_rows()
    looked = frozenset(r["corpus"] for r in first)
    rows = [
        row
        for name, path in corpora
        for row in (
            [r for r in first if r["corpus"] == name]
            if name in looked
            else rows_of(name, path, engine)
        )
    ]
    strength = choose_strength(rows)
    table, kinds = fit_kinds(rows, strength, looked)
    ROWS.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    TABLE.write_text(
        json.dumps(
            {
                "fitted_on": [name for name, _ in corpora],
                "diagnosed_logs": len(rows),
                "prior_strength": strength,
                "multi_rank_kinds_fitted_on": sorted(looked),
                "points": [
                    {"score": s, "probability": p}
                    for s, p in zip(table.scores, table.probabilities, strict=True)
                ],
                "kinds": {
                    kind: {
                        "diagnosed_logs": n,
                        "prior_strength": kind_strength,
                        "points": [
                            {"score": s, "probability": p}
                            for s, p in zip(t.scores, t.probabilities, strict=True)
                        ],
                    }
                    for kind, (t, kind_strength, n) in kinds.items()
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    deciles, ece = reliability([stated(table, kinds, r) for r in rows], [r["right"] for r in rows])
    print(f"{len(rows)} diagnosed logs, prior strength {strength}")
    for kind, (_, kind_strength, n) in kinds.items():
        print(f"  kind {kind!r}: {n} logs, a table of its own (prior strength {kind_strength})")
    for span, n, mean, rate in deciles:
        print(f"  {span}: {n:4d} logs, stated {mean:.2f}, right {rate:.2f}")
    print(f"expected calibration error on the fitted rows: {ece:.3f}")
    for name, _ in corpora:
        print(f"  {name}, fitted without it: ECE {held_out_ece(rows, name, looked):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
