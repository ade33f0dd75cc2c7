"""The catalogue as data files: load and validate `entries/*.yaml` without Django.

The matching engine, the offline CLI and `manage.py load_catalogue` all read the catalogue through
this module, so the files in the repository are the single source of the shipped catalogue, and
`schema.json` the single source of what an entry may hold: its field names, categories and
severities are read from it here, and the encyclopedia app uses these names.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, Final

import jsonschema
import yaml

CATALOGUE_DIR = Path(__file__).resolve().parent / "entries"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"

# An entry as validated against schema.json. A dict rather than a TypedDict: the schema is the one
# definition of its fields, and a TypedDict would repeat all twenty of them.
Entry = dict[str, Any]

SCHEMA: Final[dict[str, Any]] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
# The top-level fields of an entry, in the schema's order.
ENTRY_FIELDS: Final[tuple[str, ...]] = tuple(SCHEMA["properties"])
# In the order the encyclopedia shows them (the schema lists them so).
CATEGORIES: Final[tuple[str, ...]] = tuple(SCHEMA["properties"]["category"]["enum"])
SEVERITIES: Final[tuple[str, ...]] = tuple(SCHEMA["properties"]["severity"]["enum"])


class CatalogueError(ValueError):
    """A catalogue file is malformed; the message names the file and the field."""


@cache
def _validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


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
