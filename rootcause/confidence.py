"""The words beside a calibrated confidence (the probability that a diagnosis is right, see
rootcause/engine/calibration.py), for every surface that shows one: the result page, the CLI's
text, JSON, GitHub and JUnit outputs, the API, alerts and the VS Code panel.

The engine writes them into the result (`failure.confidence_level` and
`failure.confidence_words`, through `rootcause.result.failure_of`), so a surface that reads the
JSON shows them as they are; a surface that prints the figure calls `stated`, which also words a
result stored before the words existed. A "possible" answer always says what would decide it: the
evidence to add (a rank's own output when only its launcher spoke of it) or the entry's first
cheap check.

Kept apart from the engine so that the light client (no Hyperscan) can say them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

# At or above CERTAIN nine diagnoses in ten of that confidence were right on the development
# corpora; at or above LIKELY most were; below it the answer is a lead to confirm.
CERTAIN, LIKELY = 0.9, 0.6

Level = Literal["certain", "likely", "possible"]
LEVELS: tuple[str, ...] = get_args(Level)
# For a "possible" answer that carries nothing better (a result stored before the words existed).
_GENERIC = "what is missing (below)"


def confidence_level(probability: float) -> Level:
    """Which of the three words the figure earns."""
    if probability >= CERTAIN:
        return "certain"
    if probability >= LIKELY:
        return "likely"
    return "possible"


def confidence_words(probability: float, confirm: str | None = None) -> str:
    """What the figure means for the reader's next step: "certain", "likely", or "possible —
    confirm with …" naming what would decide it (`confirm`, see `what_would_decide`)."""
    level = confidence_level(probability)
    if level != "possible":
        return level
    return "possible — confirm with " + " ".join((confirm or _GENERIC).split())


def what_would_decide(
    *,
    check: str | None = None,
    silent_rank: int | None = None,
    launcher_only: bool = False,
    rivals: Sequence[str] = (),
) -> str:
    """What would settle a diagnosis, from what the result rests on: the failed rank's own
    output when only its launcher reported it (`launcher_only`, `silent_rank`), else the
    class's first cheap check (`check`: the entry's checklist), and the rival classes the
    evidence could not tell apart."""
    if launcher_only:
        who = f"rank {silent_rank}'s" if silent_rank is not None else "the failed process's"
        text = (
            f"{who} own output: its traceback or last lines (only the launcher reported it; "
            "torchrun --tee 3 --log-dir logs keeps one file per rank)"
        )
    elif check:
        text = "this check: " + check.strip().rstrip(".")
    else:
        text = (
            "the full output of the failing process around the error (its traceback, and what "
            "the run was doing just before)"
        )
    if rivals:
        text += f"; it tells this class from {', '.join(rivals)}"
    return text


def stated(probability: float, words: object = None) -> str:
    """The figure and its words as the surfaces print them: `0.42 (possible — confirm …)`.

    `words` is the result's `failure.confidence_words`; anything but a string (unset, a result
    stored before the words existed) is worded again from the figure."""
    said = words if isinstance(words, str) and words else confidence_words(probability)
    return f"{probability:.2f} ({said})"
