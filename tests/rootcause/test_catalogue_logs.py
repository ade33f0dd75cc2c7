"""Every test log written for a catalogue entry is diagnosed as that entry, masking included."""

import json
from pathlib import Path

import pytest

from rootcause.cli import diagnose_path
from rootcause.engine import get_engine

LOGS = Path(__file__).resolve().parents[1] / "logs"
CASES = sorted(LOGS.glob("*/*.log"))


def test_there_are_logs_to_check():
    assert len(CASES) >= 10


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_log_is_diagnosed_as_its_entry(path):
    result = diagnose_path(str(path), get_engine())
    expect_file = path.with_suffix(".expect.json")
    expect = json.loads(expect_file.read_text()) if expect_file.exists() else {}
    slug = expect.get("slug", path.parent.name)
    if slug == "none":
        assert result.outcome == "no_match", result.failure
        assert result.missing_facts
        return
    got = result.failure.slug if result.failure else None
    assert got == slug, result.evidence
    if "initiating_rank" in expect:
        assert result.initiating_rank == expect["initiating_rank"]
