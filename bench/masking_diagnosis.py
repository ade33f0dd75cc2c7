"""Does masking change a diagnosis? Every log of every labelled corpus diagnosed twice, from its
raw text and from its masked text (what the service and `diagnose --offline` read), compared
on what a diagnosis says: the outcome, the failure class and the initiating rank.

The corpora are those of `make eval` (bench/eval.py): each directory of ``../shared/corpus``
with a labels.jsonl, and bench/realruns/corpus. A sealed corpus is reported by its counts only
(no file names). Exits 1 when a diagnosis differs.

    python -m bench.masking_diagnosis [--shared ../shared] [--corpus DIR ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.eval import default_corpora, sealed
from rootcause.cli.reading import masked_chunks, raw_pieces
from rootcause.engine import Engine, get_engine
from rootcause.masking import iter_line_chunks
from rootcause.result import DiagnosisResult

ROOT = Path(__file__).resolve().parents[1]


# (outcome, failure slug, initiating rank): what a diagnosis said, compared raw and masked
Said = tuple[str, str | None, int | None]


def _said(result: DiagnosisResult) -> Said:
    return (result.outcome, result.failure.slug if result.failure else None, result.initiating_rank)


def compare(corpus: Path, engine: Engine) -> tuple[int, list[tuple[str, Said, Said]]]:
    """How many logs were compared, and (file, raw, masked) for each that differs."""
    files = [
        json.loads(line)["file"]
        for line in (corpus / "labels.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    differ = []
    for name in files:
        path = str(corpus / name)
        raw = _said(engine.diagnose(iter_line_chunks(raw_pieces(path), 1 << 20)))
        masked = _said(engine.diagnose(masked_chunks(path, {})))
        if raw != masked:
            differ.append((name, raw, masked))
    return len(files), differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--corpus", type=Path, action="append")
    args = parser.parse_args(argv)
    corpora = [(str(p), p) for p in args.corpus] if args.corpus else default_corpora(args.shared)
    engine = get_engine()
    total = changed = 0
    for name, directory in corpora:
        n, differ = compare(directory, engine)
        total += n
        changed += len(differ)
        print(f"{name}: {n} logs, {len(differ)} diagnoses changed by masking", flush=True)
        if not sealed(name):
            for file, raw, masked in differ:
                print(f"  {file}: raw {raw} masked {masked}")
    print(f"all: {total} logs, {changed} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
