"""Calibrated confidence: the evidence score of a diagnosis turned into the measured probability
that the diagnosis is right, and the words a reader acts on.

The evidence score is what the rules compute from the weights of the signals that held (or, for a
class proposed by likeness, from the likeness). `bench/calibrate.py` measures, over the labelled
development corpora (never the sealed one), how often a diagnosis with a given score was right
(class, and the initiating rank where the label names one), and writes `calibration.json`: the
points of a non-decreasing step function from score to probability (bins of the score, each
bin's rate shrunk towards its score by a prior chosen by leaving one corpus out, then made
monotone). Between two points the probability is interpolated linearly.

One table does not fit every kind of answer: on run-produced multi-rank logs a class read from a
traceback is as sure as anywhere, but the rank beside it is only as sure as what named it (its
own root-cause error, a launcher's report, the one rank that reported nothing). So each answer
has a kind (`answer_kind`: one process; several ranks, none named, and whether because they
failed alike; or the rank and the evidence that named it), and the file holds a table per kind
fitted on that kind's logs, each bin shrunk towards a prior (few logs of a kind say little); a
kind without a table of its own takes the table of all kinds. The multi-rank kinds' logs are only
the first looks of run-produced development rounds (each scored on arrival, before the engine
learnt from it): on any corpus the rank rules were written from, a named rank is right by
construction and says nothing of an unseen log. Their prior is the first looks' own rate of right
multi-rank answers, never above the table of all kinds.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rootcause.ranks import OWN_ERROR_BASES, Basis

TABLE = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Calibration:
    scores: tuple[float, ...]  # increasing evidence scores
    probabilities: tuple[float, ...]  # non-decreasing measured probabilities at those scores

    def __call__(self, score: float) -> float:
        xs, ys = self.scores, self.probabilities
        if not xs:
            return score
        if score <= xs[0]:
            return ys[0]
        if score >= xs[-1]:
            return ys[-1]
        k = bisect.bisect_right(xs, score)
        x0, x1, y0, y1 = xs[k - 1], xs[k], ys[k - 1], ys[k]
        return y0 + (y1 - y0) * (score - x0) / (x1 - x0) if x1 > x0 else y1


IDENTITY = Calibration((), ())
_override: list[Calibration] = []
_recording: list[list[tuple[float, str]]] = []

# The kinds of answer (answer_kind), from what the rank inference says its answer rests on
# (rootcause.ranks.Basis).
ONE_PROCESS = "one process"
ALIKE = "ranks alike, none named"
NOT_SINGLED_OUT = "ranks, none singled out"
OWN_ERROR = "rank by its own error"
INFERRED = "rank by inference"
PROPOSED = "proposed by likeness"


def answer_kind(*, multi: bool, rank: int | None, basis: Basis) -> str:
    """What the answer's confidence rests on, beside the class: one process; several ranks that
    failed alike, none named; several ranks and none singled out though the log does not say
    they failed alike (only collateral errors, a repeated error without a rank); a rank that
    raised the root-cause error itself (the only raiser, the first by time or by order); a rank
    inferred from the others (the one that stayed silent, the launcher's first exit, a crash
    signal, a collective report)."""
    if not multi and rank is None:
        return ONE_PROCESS
    if rank is None:
        return ALIKE if basis is Basis.ALIKE else NOT_SINGLED_OUT
    return OWN_ERROR if basis in OWN_ERROR_BASES else INFERRED


def _table(points: list[dict[str, float]]) -> Calibration:
    return Calibration(
        tuple(float(p["score"]) for p in points), tuple(float(p["probability"]) for p in points)
    )


@cache
def _shipped() -> tuple[Calibration, dict[str, Calibration]]:
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    kinds = {kind: _table(fit["points"]) for kind, fit in data.get("kinds", {}).items()}
    return _table(data["points"]), kinds


def calibrated(score: float, kind: str = "") -> float:
    """The probability that a diagnosis of this kind (answer_kind) with this evidence score is
    right, rounded to 0.01."""
    for seen in _recording:
        seen.append((score, kind))
    if _override:
        table = _override[-1]
    else:
        every, kinds = _shipped()
        table = kinds.get(kind, every)
    return round(min(max(table(score), 0.01), 0.99), 2)


@contextmanager
def recording() -> Iterator[list[tuple[float, str]]]:
    """Within the block, every (score, kind) calibrated is appended to the list yielded (the fit
    reads the kind of each answer this way)."""
    seen: list[tuple[float, str]] = []
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.pop()


@contextmanager
def using(table: Calibration) -> Iterator[None]:
    """Within the block, confidences come from `table` instead of the shipped one."""
    _override.append(table)
    try:
        yield
    finally:
        _override.pop()


def raw_scores() -> AbstractContextManager[None]:
    """Within the block, confidences are the raw evidence scores (for fitting the table)."""
    return using(IDENTITY)
