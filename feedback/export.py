"""The labelled corpus made of verdicts: each diagnosis's masked evidence as a log, and its
label (the class the verdict says is right) in labels.jsonl, as `../shared/corpus/dev3` lays
them out, so that `make eval` (`python -m bench.eval --corpus DIR`) scores the engine on it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from diagnosis.selectors import stored_result
from feedback.models import Feedback
from feedback.selectors import exportable
from rootcause.result import DiagnosisResult

LABELS = "labels.jsonl"


@dataclass(frozen=True)
class Exported:
    written: int
    skipped: int  # verdicts whose diagnosis keeps no evidence (nothing to label)


def _label(feedback: Feedback, result: DiagnosisResult, file: str) -> dict[str, object]:
    confirmed = feedback.verdict == Feedback.Verdict.RIGHT
    return {
        "file": file,
        "slug": feedback.correct_slug,
        "multi_rank": len({row.rank for row in result.ranks}) > 1,
        # The rank the engine named is a label only where the person confirmed the diagnosis.
        "initiating_rank": result.initiating_rank if confirmed else None,
        "source": f"feedback:{feedback.diagnosis_id}",
        "stack": "feedback",
        "why": (
            f"{feedback.verdict} on {feedback.diagnosed_slug or 'no match'}"
            f" (review: {feedback.review})" + (f"; note: {feedback.note}" if feedback.note else "")
        ),
    }


def export_feedback(directory: Path, *, accepted_only: bool = False) -> Exported:
    """Write the corpus into `directory` (made if missing; labels.jsonl replaced)."""
    directory.mkdir(parents=True, exist_ok=True)
    labels: list[dict[str, object]] = []
    skipped = 0
    for feedback in exportable(accepted_only=accepted_only).iterator():
        result = stored_result(feedback.diagnosis)
        if result is None or not result.evidence:
            skipped += 1
            continue
        file = f"fb-{feedback.correct_slug}__{feedback.diagnosis_id}.log"
        # Only the masked evidence was ever stored: the log itself is gone.
        text = "\n".join(line.text for line in result.evidence) + "\n"
        (directory / file).write_text(text, encoding="utf-8")
        labels.append(_label(feedback, result, file))
    (directory / LABELS).write_text(
        "".join(json.dumps(label) + "\n" for label in labels), encoding="utf-8"
    )
    return Exported(written=len(labels), skipped=skipped)
