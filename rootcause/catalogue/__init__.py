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
from typing import TYPE_CHECKING, Any, Final

import yaml

from rootcause import hscache

if TYPE_CHECKING:
    import jsonschema

CATALOGUE_DIR = Path(__file__).resolve().parent / "entries"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"

# An entry as validated against schema.json. A dict rather than a TypedDict: the schema is the one
# definition of its fields, and a TypedDict would repeat all twenty of them.
Entry = dict[str, Any]
# libyaml's safe loader when PyYAML has it (its wheels do): 15 times faster than the Python one,
# which was most of a command line's start-up.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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
    import jsonschema  # here: importing it was a tenth of a command line's start-up

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
    files = [(path, path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.yaml"))]
    # The same files and schema validated before (a cached mark, see hscache): not again.
    digest = hashlib.sha256(SCHEMA_PATH.read_bytes())
    for path, text in files:
        digest.update(f"\0{path.name}\0{len(text)}\0".encode() + text.encode())
    mark = f"catalogue-{digest.hexdigest()[:32]}"
    valid_before = hscache.known(mark)
    entries = []
    for path, text in files:
        data = yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader, C or Python)
        entry = data if valid_before else validate_entry(data, source=path.name)
        if entry["slug"] != path.stem:
            raise CatalogueError(f"{path.name}: slug {entry['slug']!r} differs from the file name")
        entries.append(entry)
    slugs = {e["slug"] for e in entries}
    for entry in entries:
        unknown = set(entry["related"]) - slugs
        if unknown:
            raise CatalogueError(f"{entry['slug']}.yaml: related names unknown {sorted(unknown)}")
    if not valid_before:
        hscache.mark(mark)
    return entries


def catalogue_version(entries: list[Entry]) -> str:
    """A short digest of everything the matcher and remediation read: it changes with any edit."""
    canonical = json.dumps(
        [{k: e[k] for k in ("slug", "fingerprints", "fix", "verification")} for e in entries],
        sort_keys=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
