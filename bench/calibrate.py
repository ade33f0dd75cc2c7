"""Fit the confidence calibration (rootcause/engine/calibration.json) on the development corpora.

`python -m bench.calibrate --shared ../shared` diagnoses every log of ../shared/corpus/{dev,dev2,
dev3} and bench/realruns/corpus/dev with raw evidence scores, records for each diagnosed log its
score and whether the diagnosis was right (the class, and the initiating rank where the label
names one; a class named for an out-of-taxonomy log is wrong), writes those rows to
bench/calibration_rows.jsonl (the test holds the expected calibration error on them) and the
fitted table to calibration.json. The sealed corpus is never read here.

The fit: the scores are cut into fixed bins; each bin's rate of right answers is shrunk towards
the bin's mean score by a prior of `strength` pseudo-observations (few logs in a bin say little),
the strength chosen among STRENGTHS (at least 5: these corpora are the ones the signals were
written from) by leaving one corpus out (the one that minimises the squared error on the left-out
corpus), and the bins are then made non-decreasing (pool adjacent
violators).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from rootcause.cli import InputError, diagnose_path
from rootcause.engine import Engine, get_engine
from rootcause.engine.calibration import TABLE, Calibration, raw_scores

ROOT = Path(__file__).resolve().parent.parent
ROWS = Path(__file__).with_name("calibration_rows.jsonl")
FIT_CORPORA = ("dev", "dev2", "dev3")
EDGES = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01)
# At least 5 pseudo-observations: the development corpora are the ones the signals were written
# from, so a bin of a few weak-evidence logs there is right by construction, not by measure (with
# no prior, a lone driver line or a class proposed by likeness was stated certain)
STRENGTHS = (5.0, 10.0, 20.0, 50.0)
OUT_OF_TAXONOMY = "out_of_taxonomy"


class Scored(TypedDict):
    """What the fit reads of a diagnosed log: its corpus, raw score and whether it was right."""

    corpus: str
    score: float
    right: bool


class Row(Scored):
    """A diagnosed log of calibration_rows.jsonl."""

    file: str


def rows_of(name: str, corpus: Path, engine: Engine) -> list[Row]:
    """One row per diagnosed log: its raw evidence score and whether the diagnosis was right."""
    rows: list[Row] = []
    for line in (corpus / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label = json.loads(line)
        try:
            with raw_scores():
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
            }
        )
    return rows


def fit(rows: Sequence[Scored], strength: float) -> Calibration:
    bins: list[tuple[float, float, int]] = []  # (mean score, shrunk rate, weight)
    for lo, hi in itertools.pairwise(EDGES):
        inside = [r for r in rows if lo <= r["score"] < hi]
        if not inside:
            continue
        mean = sum(r["score"] for r in inside) / len(inside)
        right = sum(r["right"] for r in inside)
        rate = (right + strength * mean) / (len(inside) + strength)
        bins.append((mean, rate, len(inside)))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    args = parser.parse_args(argv)
    engine = get_engine()
    corpora = [(f"shared/{n}", args.shared / "corpus" / n) for n in FIT_CORPORA]
    corpora.append(("realruns/dev", ROOT / "bench" / "realruns" / "corpus" / "dev"))
    missing = [name for name, path in corpora if not (path / "labels.jsonl").is_file()]
    if missing:
        print(f"error: the fit needs every development corpus; missing {missing}", file=sys.stderr)
        return 2
    rows = [row for name, path in corpora for row in rows_of(name, path, engine)]
    strength = choose_strength(rows)
    table = fit(rows, strength)
    ROWS.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    TABLE.write_text(
        json.dumps(
            {
                "fitted_on": [name for name, _ in corpora],
                "diagnosed_logs": len(rows),
                "prior_strength": strength,
                "points": [
                    {"score": s, "probability": p}
                    for s, p in zip(table.scores, table.probabilities, strict=True)
                ],
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    deciles, ece = reliability([table(r["score"]) for r in rows], [r["right"] for r in rows])
    print(f"{len(rows)} diagnosed logs, prior strength {strength}")
    for span, n, stated, rate in deciles:
        print(f"  {span}: {n:4d} logs, stated {stated:.2f}, right {rate:.2f}")
    print(f"expected calibration error on the fitted rows: {ece:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
