from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.services_check"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_make_test_stops_at_once_naming_the_unreachable_service():
    result = _check(REDIS_URL="redis://127.0.0.1:1/0")

    assert result.returncode == 1
    assert "Redis at 127.0.0.1:1 (REDIS_URL) is unreachable" in result.stderr
    assert "PostgreSQL at" not in result.stderr


def test_it_passes_when_both_services_answer():
    result = _check()

    assert result.returncode == 0, result.stderr
