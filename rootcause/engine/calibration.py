"""Calibrated confidence: the evidence score of a diagnosis turned into the measured probability
that the diagnosis is right, and the words a reader acts on.

The evidence score is what the rules compute from the weights of the signals that held (or, for a
class proposed by likeness, from the likeness). `bench/calibrate.py` measures, over the labelled
development corpora (never the sealed one), how often a diagnosis with a given score was right
(class, and the initiating rank where the label names one), and writes `calibration.json`: the
points of a non-decreasing step function from score to probability (bins of the score, each
bin's rate shrunk towards its score by a prior chosen by leaving one corpus out, then made
monotone). Between two points the probability is interpolated linearly.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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


@cache
def _shipped() -> Calibration:
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    points = data["points"]
    return Calibration(
        tuple(float(p["score"]) for p in points), tuple(float(p["probability"]) for p in points)
    )


def calibrated(score: float) -> float:
    """The probability that a diagnosis with this evidence score is right, rounded to 0.01."""
    table = _override[-1] if _override else _shipped()
    return round(min(max(table(score), 0.01), 0.99), 2)


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
