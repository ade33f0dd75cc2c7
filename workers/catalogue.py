"""The engine the worker matches with: built from the catalogue in the database, per version.

The admin can edit fingerprints, which bumps the catalogue version; a worker sees the new version at
its next task and compiles a new engine. Before `load_catalogue` has run the database holds no
entries, and the catalogue shipped in the package is used instead.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from encyclopedia.catalogue_files import catalogue_version, load_entries
from encyclopedia.models import CatalogueVersion, Entry
from workers.engine import Engine

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_cached: tuple[str, Engine, dict[str, dict[str, Any]]] | None = None


def _database_version() -> str | None:
    row = CatalogueVersion.objects.order_by("-created_at").values_list("version", flat=True).first()
    return row


def _load(version: str | None) -> tuple[str, Engine, dict[str, dict[str, Any]]]:
    entries: list[dict[str, Any]] = list(Entry.objects.values_list("data", flat=True))
    if version is None or not entries:
        logger.warning("catalogue not loaded into the database; using the shipped files")
        entries = load_entries()
        version = catalogue_version(entries)
    return version, Engine(entries), {e["slug"]: e for e in entries}


def _current() -> tuple[str, Engine, dict[str, dict[str, Any]]]:
    global _cached
    version = _database_version()
    cached = _cached
    if cached is not None and version is not None and cached[0] == version:
        return cached
    with _lock:
        if _cached is None or version is None or _cached[0] != version:
            _cached = _load(version)
        return _cached


def current_engine() -> Engine:
    return _current()[1]


def entry_for(slug: str) -> dict[str, Any] | None:
    return _current()[2].get(slug)
