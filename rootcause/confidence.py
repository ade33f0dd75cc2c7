"""The words beside a calibrated confidence (the probability that a diagnosis is right, see
rootcause/engine/calibration.py), for every surface that shows one: CLI, pages, API, VS Code.

Kept apart from the engine so that the light client (no Hyperscan) can say them too.
"""

from __future__ import annotations

# At or above CERTAIN nine diagnoses in ten of that confidence were right on the development
# corpora; at or above LIKELY most were; below it the answer is a lead to confirm.
CERTAIN, LIKELY = 0.9, 0.6


def confidence_words(probability: float) -> str:
    """What the figure means for the reader's next step."""
    if probability >= CERTAIN:
        return "certain"
    if probability >= LIKELY:
        return "likely"
    return "possible — confirm with what is missing (below)"
