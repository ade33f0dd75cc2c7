"""A small catalogue written for the tests, so the mechanics do not depend on the shipped files."""

from __future__ import annotations

from typing import Any

import pytest

from encyclopedia import services
from tests.catalogue import make_entry


@pytest.fixture
def small_catalogue(db: Any) -> list[dict[str, Any]]:
    entries = [
        make_entry("test-oom", tags=["cuda-oom", "adam"], related=["test-nccl"]),
        make_entry("test-nccl", category="distributed", severity="medium", tags=["nccl"]),
        make_entry("test-disk", category="checkpoint", severity="low", tags=["disk"]),
    ]
    services.load_catalogue(entries=entries)
    return entries
