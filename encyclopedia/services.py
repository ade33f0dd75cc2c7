"""Writes to the catalogue: loading the data files and editing one entry from the admin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from encyclopedia.models import CatalogueVersion, Entry
from encyclopedia.selectors import current_version
from plumbing.problems import ApplicationError
from rootcause import catalogue as catalogue_files
from rootcause.jsonvalue import JSONObject


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


def _columns(entry: catalogue_files.Entry) -> dict[str, object]:
    return {
        "title": entry.title,
        "category": entry.category,
        "severity": entry.severity,
        "tags": list(entry.tags),
        "data": catalogue_files.entry_data(entry),
    }


def _record_version(
    *, entries: Sequence[catalogue_files.Entry] | Sequence[Mapping[str, object]], reason: str
) -> tuple[str, bool]:
    version = catalogue_files.catalogue_version(entries)
    if version == current_version():
        return version, False
    CatalogueVersion.objects.create(version=version, entry_count=len(entries), reason=reason)
    return version, True


def load_catalogue(
    *, entries: Sequence[catalogue_files.Entry | Mapping[str, object]] | None = None
) -> LoadReport:
    """Make the database hold exactly `entries` (default: the catalogue files). Idempotent.

    Entries given as data (parsed JSON or YAML) are decoded as the files are. Creates, updates
    and deletes only what differs, and appends a catalogue version only when the version digest
    of the whole catalogue changed.
    """
    if entries is None:
        typed = catalogue_files.load_entries()
    else:
        typed = [
            e
            if isinstance(e, catalogue_files.Entry)
            else catalogue_files.decode_entry(e, source=str(e.get("slug")))
            for e in entries
        ]
    slugs = [e.slug for e in typed]
    if len(set(slugs)) != len(slugs):
        raise ApplicationError("The catalogue has duplicate slugs.")

    report = LoadReport()
    with transaction.atomic():
        # Lock the existing rows so two loads at once (several web processes starting) serialise.
        existing = {e.slug: e for e in Entry.objects.select_for_update().order_by("slug")}
        for entry in typed:
            row = existing.get(entry.slug)
            columns = _columns(entry)
            if row is None:
                Entry.objects.create(slug=entry.slug, **columns)
                report.created.append(entry.slug)
            elif row.data != columns["data"]:
                for name, value in columns.items():
                    setattr(row, name, value)
                row.save(update_fields=[*columns, "updated_at"])
                report.updated.append(entry.slug)
            else:
                report.unchanged += 1
        gone = sorted(set(existing) - set(slugs))
        if gone:
            Entry.objects.filter(slug__in=gone).delete()
            report.deleted = gone
        report.version, report.version_changed = _record_version(
            entries=sorted(typed, key=lambda e: e.slug), reason="load_catalogue"
        )
    return report


def _decoded(*, entry: Entry, data: object) -> catalogue_files.Entry:
    """An edited entry, decoded: the struct's checks, the unchanged slug, related slugs that
    exist."""
    try:
        cleaned = catalogue_files.decode_entry(data, source=entry.slug)
    except catalogue_files.CatalogueError as exc:
        raise ApplicationError(str(exc)) from None
    if cleaned.slug != entry.slug:
        # The slug is the public id (URLs, API, diagnoses) and the file name; it is not edited.
        raise ApplicationError(f"slug cannot change (it is {entry.slug!r})")
    related = set(cleaned.related)
    known = set(Entry.objects.filter(slug__in=related).values_list("slug", flat=True))
    if related - known:
        raise ApplicationError(f"related names unknown: {sorted(related - known)}")
    return cleaned


def clean_entry_data(*, entry: Entry, data: object) -> JSONObject:
    """Validate an edited entry (see _decoded); its data as it will be stored."""
    return catalogue_files.entry_data(_decoded(entry=entry, data=data))


def update_entry(*, entry: Entry, data: object) -> Entry:
    """Save an edited entry; bumps the catalogue version when fingerprints, fix or verification
    changed (anything the version digest covers)."""
    columns = _columns(_decoded(entry=entry, data=data))
    with transaction.atomic():
        for name, value in columns.items():
            setattr(entry, name, value)
        entry.save(update_fields=[*columns, "updated_at"])
        entries = sorted(Entry.objects.values_list("data", flat=True), key=lambda e: e["slug"])
        _record_version(entries=entries, reason=f"admin edit of {entry.slug}")
    return entry
