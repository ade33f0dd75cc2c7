"""A small hand-written catalogue for engine tests, independent of the shipped entries."""

from __future__ import annotations

from typing import Any

from rootcause.catalogue import Entry
from rootcause.catalogue.entry import Fingerprints, FingerprintSignal, Fix, Verification


def _entry(slug: str, signals: list[dict[str, Any]], *, collateral: bool = False) -> dict[str, Any]:
    return {
        "slug": slug,
        "title": slug.replace("-", " ").title(),
        "category": "distributed" if collateral else "memory",
        "quick_answer": f"The {slug} failure happened. More detail follows here.",
        "fix": {"steps": [f"fix {slug}"], "command": f"fix-{slug} --now"},
        "verification": {"command": f"verify-{slug}", "expect": "ok"},
        "fingerprints": {"collateral": collateral, "signals": signals},
    }


def entries() -> list[Entry]:
    return typed(data())


def typed(items: list[dict[str, Any]]) -> list[Entry]:
    """The entries as the engine takes them. Built directly, not decoded: these entries hold only
    what the engine reads, not the prose a catalogue file must have."""
    return [
        Entry(
            slug=d["slug"],
            title=d["title"],
            category=d["category"],
            tags=[],
            severity="high",
            quick_answer=d["quick_answer"],
            mechanism="",
            observe=[],
            symptoms=[],
            affected=[],
            checklist=[],
            signatures=[],
            root_causes=[],
            fix=Fix(**d["fix"]),
            prevention=[],
            verification=Verification(**d["verification"]),
            references=[],
            related=[],
            fingerprints=Fingerprints(
                collateral=d["fingerprints"]["collateral"],
                signals=[FingerprintSignal(**s) for s in d["fingerprints"]["signals"]],
            ),
        )
        for d in items
    ]


def data() -> list[dict[str, Any]]:
    """The entries as data, for a test to edit before `typed`."""
    return [
        _entry(
            "optimizer-oom",
            [
                {
                    "id": "oom",
                    "pattern": r"CUDA out of memory|torch\.OutOfMemoryError",
                    "weight": 0.9,
                    "in_frame": r"adamw?\.py|in step",
                },
                {
                    "id": "hint",
                    "pattern": r"PYTORCH_CUDA_ALLOC_CONF",
                    "weight": 0.1,
                    "kind": "support",
                    "within_lines": 3,
                },
            ],
        ),
        _entry(
            "fragmentation",
            [
                {
                    "id": "frag",
                    "pattern": (
                        r"Tried to allocate (?P<req>[0-9.]+ [GM]iB)[^\n]{0,200}?"
                        r"(?P<free>[0-9.]+ [GM]iB) is reserved by PyTorch but unallocated"
                    ),
                    "weight": 0.95,
                    "numeric": "free > 2 * req",
                },
                {"id": "oom", "pattern": r"CUDA out of memory", "weight": 0.2, "kind": "support"},
            ],
        ),
        _entry(
            "shape-mismatch",
            [
                {
                    "id": "mat",
                    "pattern": r"mat1 and mat2 shapes cannot be multiplied",
                    "weight": 0.95,
                },
                {"id": "size", "pattern": r"must match the size of tensor b", "weight": 0.9},
            ],
        ),
        _entry(
            "nccl-timeout",
            [
                {
                    "id": "wd",
                    "pattern": r"Watchdog caught collective operation timeout",
                    "weight": 0.9,
                },
                {"id": "seq", "pattern": r"WorkNCCL\(SeqNum=\d+", "weight": 0.2, "kind": "support"},
            ],
            collateral=True,
        ),
        _entry(
            "peer-closed",
            [
                {"id": "closed", "pattern": r"Connection closed by peer", "weight": 0.8},
                {"id": "gloo", "pattern": r"gloo/transport", "weight": 0.1, "kind": "support"},
            ],
            collateral=True,
        ),
        _entry(
            "host-oom",
            [
                {
                    "id": "sigkill",
                    "pattern": r"Signal 9 \(SIGKILL\) received by PID|exitcode\s*: -9",
                    "weight": 0.7,
                },
                {"id": "killed", "pattern": r"Out of memory: Killed process", "weight": 0.9},
            ],
        ),
    ]
