"""The same-run reference for whole-process diagnosis speed: a naive pure-Python grep.

Reads the log line by line and tests each of the taxonomy's phrases with ``in``: what anyone
would write in five minutes to find the known failure messages in a log, and what a diagnosis
that masks, matches and explains has to beat. The phrases are the literal pieces of the
``signals`` of ``../shared/taxonomy.yaml`` (split at ``/``, ``...``, brackets, quotes and the
placeholder ``N``; pieces of at least 8 characters).

    python -m bench.naive_grep LOG [--taxonomy PATH]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import yaml

TAXONOMY = Path(__file__).resolve().parents[2] / "shared" / "taxonomy.yaml"
_SPLIT = re.compile(r"\s+/\s+|\.\.\.|[()\[\]{}\"'`;,<>]|\s-\s|\bN\b|\s+or\s+")
MIN_PHRASE = 8


def phrases(taxonomy: Path = TAXONOMY) -> list[str]:
    """The literal pieces of every class's signals, each once, in the file's order."""
    data = yaml.safe_load(taxonomy.read_text(encoding="utf-8"))
    out: dict[str, None] = {}
    for cls in data["classes"]:
        for signal in cls.get("signals", []):
            for piece in _SPLIT.split(signal):
                piece = piece.strip(" :.")
                if len(piece) >= MIN_PHRASE:
                    out.setdefault(piece)
    return list(out)


def grep(path: str, wanted: list[str]) -> dict[str, int]:
    """Lines containing each phrase (the naive way: every phrase against every line)."""
    counts = dict.fromkeys(wanted, 0)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for phrase in wanted:
                if phrase in line:
                    counts[phrase] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--taxonomy", type=Path, default=TAXONOMY)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    wanted = phrases(args.taxonomy)
    found = {p: n for p, n in grep(args.log, wanted).items() if n}
    print(f"{len(wanted)} phrases, {len(found)} found in {time.perf_counter() - start:.2f} s")
    for phrase, n in sorted(found.items(), key=lambda kv: -kv[1])[:10]:
        print(f"{n:>8}  {phrase}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
