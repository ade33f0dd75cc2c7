"""The shipped catalogue files: schema, coverage of the taxonomy, no filler across entries."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rootcause.catalogue import CATALOGUE_DIR, decode_entry, load_entries

# The failure classes of shared/taxonomy.yaml; a copy, because a clone of the project has no
# shared/ folder next to it. The catalogue may hold more entries, never fewer.
TAXONOMY_SLUGS = [
    "optimizer-state-oom",
    "optimizer-state-memory",
    "activation-oom",
    "allocator-fragmentation",
    "eval-memory-growth",
    "host-oom-killed",
    "dataloader-shm",
    "nccl-timeout",
    "nccl-system-error",
    "nccl-cuda-error",
    "collective-mismatch",
    "gloo-timeout",
    "rendezvous-timeout",
    "address-in-use",
    "ddp-unused-parameters",
    "ddp-ready-twice",
    "elastic-child-failed",
    "deepspeed-op-build",
    "cuda-device-assert",
    "cuda-illegal-memory-access",
    "cublas-error",
    "cudnn-error",
    "cuda-driver-mismatch",
    "no-kernel-image",
    "gpu-hardware-fault",
    "device-mismatch",
    "cuda-not-available",
    "nan-loss",
    "fp16-loss-scale-underflow",
    "anomaly-nan-backward",
    "inplace-modification",
    "backward-twice",
    "no-grad-fn",
    "shape-mismatch",
    "dtype-mismatch",
    "state-dict-mismatch",
    "checkpoint-corrupt",
    "disk-full",
    "embedding-index-out-of-range",
    "dataloader-worker-died",
    "collate-size-mismatch",
    "too-many-open-files",
    "extension-abi-mismatch",
    "dynamo-recompile-limit",
    "kv-cache-insufficient",
    # added to the taxonomy on 2026-12-01: failures real users hit often
    "nccl-duplicate-gpu",
    "amp-fp16-params-unscale",
    "gpu-memory-held-elsewhere",
    "loss-divergence",
    "setup-oom",
]

FILLER_MIN_CHARS = 80
FILLER_MAX_ENTRIES = 2
# Fields that are not prose: patterns and link titles may repeat across entries.
NOT_PROSE = {"fingerprints", "references"}

FILES = sorted(CATALOGUE_DIR.glob("*.yaml"))


def test_taxonomy_copy_has_the_50_classes() -> None:
    assert len(TAXONOMY_SLUGS) == 50
    assert len(set(TAXONOMY_SLUGS)) == 50


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_is_valid_against_the_schema(path: Path) -> None:
    entry = decode_entry(yaml.safe_load(path.read_text(encoding="utf-8")), source=path.name)
    assert entry.slug == path.stem


def test_whole_catalogue_loads_with_related_names_resolved() -> None:
    entries = load_entries()
    slugs = [e.slug for e in entries]
    assert len(slugs) == len(set(slugs))
    for entry in entries:
        assert entry.slug not in entry.related, f"{entry.slug} lists itself as related"


def test_every_taxonomy_slug_has_an_entry() -> None:
    present = {path.stem for path in FILES}
    missing = sorted(set(TAXONOMY_SLUGS) - present)
    assert not missing, f"no catalogue file for {missing}"


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if not path and key in NOT_PROSE:
                continue
            yield from _strings(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}/{i}")


def paragraphs(entry: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, normalised paragraph) for every paragraph of 80+ characters in an entry."""
    for path, text in _strings(entry):
        for block in re.split(r"\n\s*\n", text):
            normalised = " ".join(block.split())
            if len(normalised) >= FILLER_MIN_CHARS:
                yield path, normalised


def filler(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Paragraphs found in more than FILLER_MAX_ENTRIES entries, with where they appear."""
    seen: dict[str, dict[str, str]] = defaultdict(dict)
    for entry in entries:
        for path, text in paragraphs(entry):
            seen[text].setdefault(entry["slug"], path)
    return {
        text: [f"{slug}{path}" for slug, path in where.items()]
        for text, where in seen.items()
        if len(where) > FILLER_MAX_ENTRIES
    }


def test_no_paragraph_is_repeated_in_three_entries() -> None:
    entries = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in FILES]
    repeated = filler(entries)
    assert not repeated, "filler repeated across entries:\n" + "\n".join(
        f"{text[:100]!r} in {where}" for text, where in repeated.items()
    )


def test_filler_check_catches_a_paragraph_in_three_entries() -> None:
    shared = "A generic paragraph that says nothing specific about the failure at all, padded out."
    entries: list[dict[str, Any]] = [
        {"slug": "a", "mechanism": shared, "fingerprints": {"x": shared}},
        {"slug": "b", "quick_answer": f"Specific to b.\n\n{shared}"},
        {"slug": "c", "faq": [{"q": "why?", "a": "  " + shared.replace(" ", "\n ")}]},
        {"slug": "d", "mechanism": "short"},
    ]
    assert list(filler(entries)) == [shared]
    assert sorted(filler(entries)[shared]) == ["a/mechanism", "b/quick_answer", "c/faq/0/a"]
    # Two entries sharing it is allowed, and so is a short sentence or a fingerprint.
    assert filler(entries[:2] + entries[3:]) == {}
