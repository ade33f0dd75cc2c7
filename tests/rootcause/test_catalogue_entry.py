"""Catalogue entries are typed: decoding checks them and names the file and field, the data of an
entry is what its file says, and the published JSON Schema is generated from the struct."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from rootcause.catalogue import (
    CATALOGUE_DIR,
    SCHEMA_PATH,
    CatalogueError,
    decode_entry,
    entry_data,
    json_schema_text,
    load_entries,
)
from rootcause.catalogue.entry import json_schema
from tests.catalogue import make_entry

FILES = sorted(CATALOGUE_DIR.glob("*.yaml"))


def test_the_committed_schema_is_current():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == json_schema_text(), (
        "rootcause/catalogue/schema.json is out of date: "
        "run `python -m rootcause.catalogue > rootcause/catalogue/schema.json`"
    )


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_an_entry_is_exactly_its_file_and_fits_the_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    entry = decode_entry(data, source=path.name)

    assert entry_data(entry) == data  # no default added, nothing dropped
    jsonschema.validate(data, json_schema())


def test_unset_fields_read_as_their_defaults():
    data = make_entry("test-defaults")
    entry = decode_entry(data)
    (support,) = (s for s in entry.fingerprints.signals if s.id == "hint")
    (error,) = (s for s in entry.fingerprints.signals if s.id == "oom")

    assert (error.signal_kind, support.signal_kind) == ("error", "support")
    assert entry.fingerprints.is_collateral is False
    fingerprints = entry_data(entry)["fingerprints"]
    assert isinstance(fingerprints, dict)
    assert isinstance(fingerprints["signals"], list)
    # written back as the data was: no default filled in
    assert fingerprints["signals"][0] == {
        "id": "oom",
        "pattern": "TEST-DEFAULTS-BOOM: out of memory",
        "weight": 0.9,
    }


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"severity": "catastrophic"}, "$.severity", "Invalid enum value 'catastrophic'"),
        ({"quick_answer": "too short"}, "$.quick_answer", "length >= 80"),
        ({"fix": {"steps": [], "command": "fixit"}}, "$.fix.steps", "length >= 1"),
        ({"colour": "red"}, "colour", "unknown field"),
    ],
)
def test_a_bad_entry_names_its_file_and_field(change, field, message):
    with pytest.raises(CatalogueError) as raised:
        decode_entry(make_entry("test-bad", **change), source="test-bad.yaml")

    text = str(raised.value)
    assert text.startswith("test-bad.yaml: ")
    assert field in text
    assert message in text


def test_a_bad_signal_is_named_by_its_place(tmp_path: Path):
    data = make_entry("test-weight")
    data["fingerprints"]["signals"][1]["weight"] = 1.5
    (tmp_path / "test-weight.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")

    with pytest.raises(
        CatalogueError, match=r"test-weight\.yaml: .*\$\.fingerprints\.signals\[1\]\.weight"
    ):
        load_entries(tmp_path)


def test_a_file_named_otherwise_than_its_slug_is_refused(tmp_path: Path):
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(make_entry("test-x")), encoding="utf-8")

    with pytest.raises(CatalogueError, match=r"other\.yaml: slug 'test-x' differs"):
        load_entries(tmp_path)
