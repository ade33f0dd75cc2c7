"""The catalogue as data files: load and validate `entries/*.yaml` without Django.

The matching engine, the offline CLI and `manage.py load_catalogue` all read the catalogue through
this module, so the files in the repository are the single source of the shipped catalogue.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CATALOGUE_DIR = Path(__file__).resolve().parent / "entries"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"

Entry = dict[str, Any]


class CatalogueError(ValueError):
    """A catalogue file is malformed; the message names the file and the field."""


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate_entry(entry: Any, *, source: str = "<entry>") -> Entry:
    errors = sorted(_validator().iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors
        )
        raise CatalogueError(f"{source}: {details}")
    assert isinstance(entry, dict)
    return entry


def load_entries(directory: Path = CATALOGUE_DIR) -> list[Entry]:
    """All entries, validated, sorted by slug; a file's name must be its slug."""
    entries = []
    for path in sorted(directory.glob("*.yaml")):
        entry = validate_entry(yaml.safe_load(path.read_text(encoding="utf-8")), source=path.name)
        if entry["slug"] != path.stem:
            raise CatalogueError(f"{path.name}: slug {entry['slug']!r} differs from the file name")
        entries.append(entry)
    slugs = {e["slug"] for e in entries}
    for entry in entries:
        unknown = set(entry["related"]) - slugs
        if unknown:
            raise CatalogueError(f"{entry['slug']}.yaml: related names unknown {sorted(unknown)}")
    return entries


def catalogue_version(entries: list[Entry]) -> str:
    """A short digest of everything the matcher and remediation read: it changes with any edit."""
    canonical = json.dumps(
        [{k: e[k] for k in ("slug", "fingerprints", "fix", "verification")} for e in entries],
        sort_keys=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
