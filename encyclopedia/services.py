"""Writes to the catalogue: loading the data files and editing one entry from the admin."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from config.problems import ApplicationError
from encyclopedia.models import CatalogueVersion, Entry
from encyclopedia.selectors import current_version
from rootcause import catalogue as catalogue_files


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    version: str = ""
    version_changed: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted or self.version_changed)


def _columns(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": data["title"],
        "category": data["category"],
        "severity": data["severity"],
        "tags": list(data["tags"]),
        "data": data,
    }


def _record_version(*, entries: list[dict[str, Any]], reason: str) -> tuple[str, bool]:
    version = catalogue_files.catalogue_version(entries)
    if version == current_version():
        return version, False
    CatalogueVersion.objects.create(version=version, entry_count=len(entries), reason=reason)
    return version, True


def load_catalogue(*, entries: list[dict[str, Any]] | None = None) -> LoadReport:
    """Make the database hold exactly `entries` (default: the catalogue files). Idempotent.

    Creates, updates and deletes only what differs, and appends a catalogue version only when the
    version digest of the whole catalogue changed.
    """
    if entries is None:
        entries = catalogue_files.load_entries()
    else:
        entries = [catalogue_files.validate_entry(e, source=str(e.get("slug"))) for e in entries]
    slugs = [e["slug"] for e in entries]
    if len(set(slugs)) != len(slugs):
        raise ApplicationError("The catalogue has duplicate slugs.")

    report = LoadReport()
    with transaction.atomic():
        # Lock the existing rows so two loads at once (several web processes starting) serialise.
        existing = {e.slug: e for e in Entry.objects.select_for_update().order_by("slug")}
        for data in entries:
            row = existing.get(data["slug"])
            if row is None:
                Entry.objects.create(slug=data["slug"], **_columns(data))
                report.created.append(data["slug"])
            elif row.data != data:
                for name, value in _columns(data).items():
                    setattr(row, name, value)
                row.save(update_fields=[*_columns(data), "updated_at"])
                report.updated.append(data["slug"])
            else:
                report.unchanged += 1
        gone = sorted(set(existing) - set(slugs))
        if gone:
            Entry.objects.filter(slug__in=gone).delete()
            report.deleted = gone
        report.version, report.version_changed = _record_version(
            entries=sorted(entries, key=lambda e: e["slug"]), reason="load_catalogue"
        )
    return report


def clean_entry_data(*, entry: Entry, data: Any) -> dict[str, Any]:
    """Validate an edited entry: the schema, the unchanged slug, and related slugs that exist."""
    try:
        cleaned = catalogue_files.validate_entry(copy.deepcopy(data), source=entry.slug)
    except catalogue_files.CatalogueError as exc:
        raise ApplicationError(str(exc)) from None
    if cleaned["slug"] != entry.slug:
        # The slug is the public id (URLs, API, diagnoses) and the file name; it is not edited.
        raise ApplicationError(f"slug cannot change (it is {entry.slug!r})")
    related = set(cleaned["related"])
    known = set(Entry.objects.filter(slug__in=related).values_list("slug", flat=True))
    if related - known:
        raise ApplicationError(f"related names unknown: {sorted(related - known)}")
    return cleaned


def update_entry(*, entry: Entry, data: dict[str, Any]) -> Entry:
    """Save an edited entry; bumps the catalogue version when fingerprints, fix or verification
    changed (anything the version digest covers)."""
    cleaned = clean_entry_data(entry=entry, data=data)
    with transaction.atomic():
        for name, value in _columns(cleaned).items():
            setattr(entry, name, value)
        entry.save(update_fields=[*_columns(cleaned), "updated_at"])
        entries = sorted(Entry.objects.values_list("data", flat=True), key=lambda e: e["slug"])
        _record_version(entries=entries, reason=f"admin edit of {entry.slug}")
    return entry
