"""The diagnosis tests' world with a second class, so that a verdict can name another one."""

from __future__ import annotations

from typing import Any

import pytest

from encyclopedia.services import load_catalogue
from tests.catalogue import make_entry
from tests.diagnosis.conftest import (  # noqa: F401 - fixtures, registered by being imported
    _staged_logs_do_not_outlive_the_test,
)


@pytest.fixture(autouse=True)
def _catalogue(db: Any) -> None:
    load_catalogue(
        entries=[
            make_entry(
                "optimizer-state-oom",
                title="Optimizer State Memory Explosion",
                fingerprints={
                    "signals": [
                        {"id": "oom", "pattern": r"CUDA out of memory", "weight": 0.9},
                        {
                            "id": "step",
                            "pattern": r"optimizer\.step\(\)",
                            "weight": 0.2,
                            "kind": "support",
                        },
                    ]
                },
            ),
            make_entry(
                "activation-oom",
                title="Activation Memory Overflow",
                fingerprints={
                    "signals": [
                        {"id": "act", "pattern": r"NEVER-SEEN-ACTIVATION", "weight": 0.9},
                        {"id": "more", "pattern": r"NEVER-SEEN-EITHER", "weight": 0.2},
                    ]
                },
            ),
        ]
    )
