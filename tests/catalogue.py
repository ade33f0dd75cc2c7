"""Schema-valid catalogue entries written for the tests.

For tests whose subject is not the shipped catalogue: their mechanics then do not depend on the
shipped files, and loading three entries costs a fraction of loading the whole catalogue.
"""

from __future__ import annotations

import copy
from typing import Any


def make_entry(slug: str, **overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "slug": slug,
        "title": f"Test entry {slug}",
        "category": "memory",
        "tags": ["cuda-oom", "test"],
        "severity": "high",
        "quick_answer": f"The quick answer of {slug}: the process asked the GPU for more memory "
        "than it had free, so the allocation failed.",
        "mechanism": f"The mechanism of {slug}: every tensor the step needs is allocated by the "
        "caching allocator; once the total exceeds the device capacity the allocator raises.",
        "observe": [f"observation of {slug}"],
        "symptoms": [{"symptom": f"symptom of {slug}", "why": "because of the test"}],
        "affected": ["PyTorch"],
        "checklist": [f"first check of {slug}", f"second check of {slug}"],
        "signatures": [f"SIGNATURE-{slug}: CUDA out of memory"],
        "root_causes": [f"root cause of {slug}"],
        "fix": {"steps": [f"FIX-STEP-{slug}: use a smaller batch"], "command": f"fixcmd-{slug}"},
        "prevention": [f"PREVENTION-{slug}"],
        "verification": {"command": f"verifycmd-{slug}", "expect": "it passes"},
        "code_examples": [
            {"stack": "PyTorch", "language": "python", "code": f"print('CODE-{slug}')"}
        ],
        "references": [{"title": "PyTorch CUDA semantics", "url": "https://pytorch.org/docs/"}],
        "related": [],
        "fingerprints": {
            "signals": [
                {"id": "oom", "pattern": f"{slug.upper()}-BOOM: out of memory", "weight": 0.9},
                {"id": "hint", "pattern": f"{slug.upper()}-HINT", "weight": 0.2, "kind": "support"},
            ]
        },
    }
    entry.update(copy.deepcopy(overrides))
    return entry


def oom_entry() -> dict[str, Any]:
    """The shipped slug and title of the failure in tests/diagnosis/logs.OOM_LOG, matched by its
    OOM line: the one entry the service tests' catalogue needs."""
    return make_entry(
        "optimizer-state-oom",
        title="Optimizer State Memory Explosion",
        fingerprints={
            "signals": [
                {"id": "oom", "pattern": r"CUDA out of memory", "weight": 0.9},
                {"id": "step", "pattern": r"optimizer\.step\(\)", "weight": 0.2, "kind": "support"},
            ]
        },
    )
