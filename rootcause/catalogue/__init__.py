"""The catalogue as data files: load `entries/*.yaml` into typed entries, without Django.

The matching engine, the offline CLI and `manage.py load_catalogue` all read the catalogue through
this module, so the files in the repository are the single source of the shipped catalogue, and
the structs of `entry.py` the single source of what an entry may hold: `schema.json` is generated
from them (`python -m rootcause.catalogue > rootcause/catalogue/schema.json`; a test keeps it
current), and the encyclopedia app uses the names read here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, get_args

import msgspec
import yaml

from rootcause.catalogue.entry import Category, Entry, FaqTopic, Severity, json_schema
from rootcause.jsonvalue import JSONObject

__all__ = [
    "CATALOGUE_DIR",
    "CATEGORIES",
    "ENTRY_FIELDS",
    "FAQ_TOPICS",
    "SCHEMA_PATH",
    "SEVERITIES",
    "CatalogueError",
    "Entry",
    "catalogue_version",
    "decode_entry",
    "entry_data",
    "json_schema_text",
    "load_entries",
]

CATALOGUE_DIR = Path(__file__).resolve().parent / "entries"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"

# libyaml's safe loader when PyYAML has it (its wheels do): 15 times faster than the Python one,
# which was most of a command line's start-up.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The top-level fields of an entry, in the order the struct (and the schema) lists them.
ENTRY_FIELDS: Final[tuple[str, ...]] = Entry.__struct_fields__
# In the order the encyclopedia shows them (the Literal lists them so).
CATEGORIES: Final[tuple[str, ...]] = get_args(Category)
SEVERITIES: Final[tuple[str, ...]] = get_args(Severity)
# The standard FAQ questions, in the order the reference entry asks them ("live" last).
FAQ_TOPICS: Final[tuple[str, ...]] = get_args(FaqTopic)


class CatalogueError(ValueError):
    """A catalogue file is malformed; the message names the file and the field."""


def decode_entry(data: object, *, source: str = "<entry>") -> Entry:
    """An entry from its parsed YAML or JSON, checked against the struct; the error names
    `source` and the field (`$.fix.steps`)."""
    try:
        return msgspec.convert(data, type=Entry)
    except msgspec.ValidationError as exc:
        raise CatalogueError(f"{source}: {exc}") from None


def entry_data(entry: Entry) -> JSONObject:
    """The entry as JSON-ready builtins, exactly as its file holds it (unset fields left out)."""
    data: JSONObject = msgspec.to_builtins(entry)
    return data


def load_entries(directory: Path = CATALOGUE_DIR) -> list[Entry]:
    """All entries, decoded, sorted by slug; a file's name must be its slug."""
    entries = []
    for path in sorted(directory.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506 (a safe loader, C or Python)
        entry = decode_entry(data, source=path.name)
        if entry.slug != path.stem:
            raise CatalogueError(f"{path.name}: slug {entry.slug!r} differs from the file name")
        entries.append(entry)
    slugs = {e.slug for e in entries}
    for entry in entries:
        unknown = set(entry.related) - slugs
        if unknown:
            raise CatalogueError(f"{entry.slug}.yaml: related names unknown {sorted(unknown)}")
    return entries


def catalogue_version(entries: Sequence[Entry] | Sequence[Mapping[str, object]]) -> str:
    """A short digest of everything the matcher and remediation read: it changes with any edit.

    Over entries, or over their stored data (the encyclopedia's rows): the same digest.
    """
    fields = ("slug", "fingerprints", "fix", "verification")
    canonical = json.dumps(
        [{k: (e if isinstance(e, Mapping) else entry_data(e))[k] for k in fields} for e in entries],
        sort_keys=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def json_schema_text() -> str:
    """The committed schema.json, byte for byte."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
