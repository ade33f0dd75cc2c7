"""Test vectors for the web page's evidence selection (diagnosis/static/diagnosis/extract.js), a
port of the CLI's extraction (rootcause/extract.py): the lines the Python extractor keeps
of real logs, stored in tests/extraction_vectors.json, which tests/diagnosis/test_extract_js.py
runs through both extractors.

Every log of tests/logs is a case twice, with small windows (the logs are short: with the CLI's
50 head and 200 tail lines everything would be kept), and a few logs are also cases at the CLI's own
sizes, set between healthy training lines (one of them past the 1 MiB
chunk the CLI reads at a time). Lines the CLI keeps only to teach the service's
masker a host or user name are listed apart: the page has no masker and does not keep them.

    python -m tests.extraction_vectors      # rewrites tests/extraction_vectors.json
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any
from unittest import mock

from rootcause import extract as extraction
from rootcause.engine import get_engine
from rootcause.masking import Masker

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "logs"
VECTORS = ROOT / "tests" / "extraction_vectors.json"
# The page's option names for the CLI's HEAD_LINES, TAIL_LINES, RANK_TAIL_LINES, AROUND_ERRORS.
SMALL = {"head": 5, "tail": 10, "rankTail": 3, "around": 10}
# Tighter still, so that each rank's tail and the engine's look-backs show on their own.
TIGHT = {"head": 1, "tail": 2, "rankTail": 2, "around": 1}
CLI_SIZES = {"head": 50, "tail": 200, "rankTail": 20, "around": 10}
PADDED = [
    "nccl-timeout/rank2_broadcast_while_others_allreduce.log",
    "optimizer-state-oom/journald_unit_adamw_oom.log",
    "activation-oom/masked_node_prefix_rank9_oom_sixteen_ranks.log",
    "rendezvous-timeout/store_based_barrier_half_the_ranks.log",
    "dataloader-shm/" + "{first}",
]
PAD_BEFORE, PAD_AFTER = 1500, 300
BIG_PAD = 17_590  # the chunk boundary falls in the middle of the log


def healthy(start: int, count: int) -> str:
    return "".join(
        f"[2024-11-20 04:{n // 60 % 60:02d}:{n % 60:02d}] step {n} loss 2.2100 grad_norm 0.71\n"
        for n in range(start, start + count)
    )


def case_text(case: dict[str, Any]) -> str:
    text = (LOGS / case["log"]).read_text(encoding="utf-8", errors="replace")
    before, after = case.get("padded", (0, 0))
    if before or after:
        text = healthy(0, before) + text + healthy(before, after)
    return text


def python_selection(text: str, options: dict[str, int]) -> tuple[list[int], list[int]]:
    """(lines the CLI keeps, those of them kept only to teach the masker), 0-based."""
    sizes: dict[str, Any] = {
        "HEAD_LINES": options["head"],
        "TAIL_LINES": options["tail"],
        "RANK_TAIL_LINES": options["rankTail"],
        "AROUND_ERRORS": options["around"],
    }

    taught_any = False

    def learn(self: Any, buf: bytes, candidates: Any) -> None:
        nonlocal taught_any
        original_learn(self, buf, candidates)
        taught_any = taught_any or bool(self.taught)

    def learn_nothing(self: Any, buf: bytes, candidates: Any) -> None:
        Masker._learn(self, buf, candidates)
        self.taught = []

    def run(teach: bool) -> set[int]:
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.multiple(extraction, **sizes))
            masker = extraction._TeachingMasker
            stack.enter_context(
                mock.patch.object(masker, "_learn", learn if teach else learn_nothing)
            )
            out = extraction.extract([text.encode("utf-8")], get_engine())
        return set(out.kept)

    original_learn = extraction._TeachingMasker._learn
    full = run(teach=True)
    # Run again without teaching only when some line taught the masker a name.
    return sorted(full), sorted(full - run(teach=False)) if taught_any else []


def cases() -> list[dict[str, Any]]:
    logs = sorted(p.relative_to(LOGS).as_posix() for p in LOGS.rglob("*.log"))
    out: list[dict[str, Any]] = [
        {"log": log, "options": options} for log in logs for options in (SMALL, TIGHT)
    ]
    for name in PADDED:
        if "{first}" in name:
            name = next(log for log in logs if log.startswith(name.split("/")[0] + "/"))
        out.append({"log": name, "options": CLI_SIZES, "padded": [PAD_BEFORE, PAD_AFTER]})
    # Above the 1 MiB chunk: the look-back and each rank's tail cross a chunk boundary.
    out.append({"log": PADDED[0], "options": CLI_SIZES, "padded": [BIG_PAD, PAD_AFTER]})
    return out


def generate() -> dict[str, Any]:
    vectors = []
    for case in cases():
        kept, taught_only = python_selection(case_text(case), case["options"])
        vectors.append({**case, "kept": kept, "taught_only": taught_only})
    return {"catalogue_version": get_engine().version, "cases": vectors}


if __name__ == "__main__":
    data = generate()
    # One case a line: the file stays readable and its diffs short.
    lines = ",\n".join(json.dumps(case) for case in data["cases"])
    version = json.dumps(data["catalogue_version"])
    VECTORS.write_text(f'{{"catalogue_version": {version}, "cases": [\n{lines}\n]}}\n')
    print(f"wrote {VECTORS}")
