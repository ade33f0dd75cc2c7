"""`make eval`: the offline diagnosis path over a labelled corpus, with accuracy figures.

Top-1 accuracy counts every labelled file (healthy logs are right when the outcome is no_match).
Initiating-rank accuracy counts only the files whose label names a rank (initiating_rank not null):
a file is right when the engine names that same rank. A stricter second figure covers every
multi-rank log: where the label says no rank can be singled out (null), naming one is wrong too.
A healthy log is misdiagnosed when the engine names any failure class for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rootcause.cli import InputError, diagnose_path
from rootcause.engine import Engine, get_engine


def evaluate(corpus: Path, engine: Engine) -> dict[str, Any]:
    labels = [
        json.loads(line)
        for line in (corpus / "labels.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    misses: list[dict[str, Any]] = []
    top1 = rank_total = rank_ok = healthy_bad = multi_total = multi_ok = 0
    started = time.perf_counter()
    for label in labels:
        try:
            result = diagnose_path(str(corpus / label["file"]), engine)
        except InputError as exc:
            misses.append(
                {"file": label["file"], "expected": label["slug"], "got": f"error: {exc}"}
            )
            continue
        got = result.failure.slug if result.failure is not None else "none"
        class_ok = got == label["slug"]
        top1 += class_ok
        if label["slug"] == "none" and got != "none":
            healthy_bad += 1
        rank_checked = label.get("initiating_rank") is not None
        rank_right = not rank_checked or result.initiating_rank == label["initiating_rank"]
        if rank_checked:
            rank_total += 1
            rank_ok += rank_right
        if label.get("multi_rank"):
            multi_total += 1
            multi_ok += result.initiating_rank == label.get("initiating_rank")
        if not (class_ok and rank_right):
            misses.append(
                {
                    "file": label["file"],
                    "expected": label["slug"],
                    "got": got,
                    "expected_rank": label.get("initiating_rank"),
                    "got_rank": result.initiating_rank,
                }
            )
    return {
        "files": len(labels),
        "top1": top1 / len(labels) if labels else 0.0,
        "rank_files": rank_total,
        "rank_accuracy": rank_ok / rank_total if rank_total else 1.0,
        "multi_rank_files": multi_total,
        "multi_rank_accuracy": multi_ok / multi_total if multi_total else 1.0,
        "healthy_misdiagnosed": healthy_bad,
        "misses": misses,
        "seconds": time.perf_counter() - started,
    }


QUESTIONS = Path(__file__).with_name("questions.json")


def follow_up_figure(cases_path: Path = QUESTIONS) -> dict[str, Any]:
    """Follow-up questions: how often the expected catalogue section is quoted first
    (diagnosis.questions.evaluate over bench/questions.json and the shipped catalogue)."""
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from diagnosis.questions import evaluate as evaluate_questions
    from rootcause.catalogue import load_entries

    cases = json.loads(cases_path.read_text(encoding="utf-8"))
    return evaluate_questions(cases, [dict(entry) for entry in load_entries()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    args = parser.parse_args(argv)
    if not (args.corpus / "labels.jsonl").is_file():
        print(f"error: no labels.jsonl in {args.corpus}", file=sys.stderr)
        return 2
    report = evaluate(args.corpus, get_engine())
    for miss in report["misses"]:
        print(
            f"MISS {miss['file']}: expected {miss['expected']} got {miss['got']}"
            f" (rank expected {miss.get('expected_rank')} got {miss.get('got_rank')})"
        )
    print(f"files: {report['files']}  ({report['seconds']:.1f} s)")
    print(f"top-1 class accuracy: {report['top1']:.1%}")
    print(
        f"initiating-rank accuracy: {report['rank_accuracy']:.1%}"
        f" over {report['rank_files']} files whose label names a rank"
    )
    print(
        f"initiating rank on all {report['multi_rank_files']} multi-rank logs (null included):"
        f" {report['multi_rank_accuracy']:.1%}"
    )
    print(f"healthy logs misdiagnosed: {report['healthy_misdiagnosed']}")
    questions = follow_up_figure()
    for miss in questions["misses"]:
        print(f"QUESTION MISS {miss['question']!r}: expected {miss['expected']} got {miss['got']}")
    print(
        f"follow-up questions, right section quoted first: {questions['first_right']}"
        f" of {questions['questions']}"
        f" ({questions['first_right'] / max(questions['questions'], 1):.1%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
