"""The diagnosis tests' world with a second class, so that a verdict can name another one."""

from __future__ import annotations

from typing import Any

import pytest

from encyclopedia.services import load_catalogue
from tests.catalogue import make_entry, oom_entry
from tests.diagnosis.conftest import (  # noqa: F401 - fixtures, registered by being imported
    _staged_logs_do_not_outlive_the_test,
)


@pytest.fixture(autouse=True)
def _catalogue(db: Any) -> None:
    load_catalogue(
        entries=[
            oom_entry(),
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
