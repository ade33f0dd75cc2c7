"""The four changes a maintainer asks about, as docs/architecture.md lists them ("Change paths").

A stage and a tier are each made in a fixture by their own tests
(tests/diagnosis/test_pipeline.py, tests/billing_tiers/test_tier_table.py): one row and one runner,
one row. Here: every file the page names for a change path exists, the page points at those
tests, and a failure class is one catalogue file — a new YAML file in a copy of the catalogue is
loaded, compiled and matched with nothing else changed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from rootcause.catalogue import CATALOGUE_DIR, load_entries
from rootcause.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PATHS = ("A failure class", "A stage", "A tier", "A masking recognizer")


def _change_paths() -> dict[str, str]:
    """Each change path's paragraph of the page, by its bold title."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Change paths", 1)[1].split("\n## ", 1)[0]
    found = dict(re.findall(r"^- \*\*(.+?)\*\*(.*?)(?=^- \*\*|\Z)", section, re.M | re.S))
    return {title.rstrip("."): body for title, body in found.items()}


def test_the_page_lists_the_four_change_paths() -> None:
    assert set(PATHS) <= set(_change_paths())


def test_every_file_a_change_path_names_exists() -> None:
    for title, body in _change_paths().items():
        named = re.findall(r"`([\w./-]+\.(?:py|yaml|md|json))`", body)
        assert named, f"{title}: names no file"
        # `<slug>` stands for the new file; ../shared is the team's, not in a user's clone.
        ours = [name for name in named if "<" not in name and not name.startswith("../")]
        missing = [name for name in ours if not (ROOT / name).exists()]
        assert not missing, f"{title}: {missing} do not exist"


def test_the_stage_and_tier_paths_point_at_the_tests_that_make_them_in_a_fixture() -> None:
    paths = _change_paths()
    assert "tests/diagnosis/test_pipeline.py" in paths["A stage"]
    assert "tests/billing_tiers/test_tier_table.py" in paths["A tier"]
    assert "tests/test_change_paths.py" in paths["A failure class"]


def test_a_failure_class_is_one_catalogue_file(tmp_path: Path) -> None:
    catalogue = tmp_path / "entries"
    shutil.copytree(CATALOGUE_DIR, catalogue)
    data = yaml.safe_load((CATALOGUE_DIR / "disk-full.yaml").read_text(encoding="utf-8"))
    data["slug"] = "frobnicator-overheated"
    data["title"] = "Frobnicator Overheated"
    data["fingerprints"] = {
        "signals": [
            {
                "id": "overheat",
                "pattern": r"FrobnicatorError: core [0-9]+ overheated",
                "weight": 0.9,
            },
            {"id": "throttle", "pattern": r"frobnicator throttled to [0-9]+ MHz", "weight": 0.6},
        ]
    }
    (catalogue / "frobnicator-overheated.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")

    before = Engine(load_entries(CATALOGUE_DIR))
    after = Engine(load_entries(catalogue))
    log = ["step 10 loss 1.2\n", "FrobnicatorError: core 3 overheated\n"]

    assert "frobnicator-overheated" not in before.by_slug
    result = after.diagnose(log)
    assert result.failure is not None
    assert result.failure.slug == "frobnicator-overheated"
    assert after.version != before.version
