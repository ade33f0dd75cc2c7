"""Reads of the catalogue, the one gate on what a reader may see, and search by error text."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from accounts.actors import Actor
from billing_tiers.selectors import entitlements_for
from encyclopedia.models import Entry
from plumbing import sql
from plumbing.problems import PayloadTooLarge
from rootcause.catalogue import CATEGORIES, ENTRY_FIELDS, decode_entry
from rootcause.catalogue import Entry as CatalogueEntry
from rootcause.jsonvalue import JSONObject
from rootcause.result import EvidenceLine, MatchedLine, SearchMatch

if TYPE_CHECKING:
    from rootcause.engine import Engine

# Pasted error text is matched in the web process; bound it so one request cannot hold a worker
# for long. Full logs go through the diagnosis pipeline instead.
SEARCH_MAX_BYTES = 1024 * 1024

# The fields of an entry (the catalogue schema names them) that only readers who may see fixes
# read: the fix, its commands, prevention, verification, code examples and fingerprints.
GATED_FIELDS = ("fix", "prevention", "verification", "code_examples", "fingerprints")
# Everything else anyone may read.
FREE_FIELDS = tuple(name for name in ENTRY_FIELDS if name not in GATED_FIELDS)
if not set(GATED_FIELDS) <= set(ENTRY_FIELDS):  # pragma: no cover - a renamed schema field
    raise ImportError(f"GATED_FIELDS names fields the catalogue schema lacks: {GATED_FIELDS}")


def can_see_fix(actor: Actor) -> bool:
    """Who may read fix steps and commands: the tier decides, as it does for diagnoses."""
    return entitlements_for(actor).fix_steps


def visible_fields(entry_data: Mapping[str, object], *, can_see_fix: bool) -> dict[str, object]:
    """The part of an entry a reader may see: the single gate for pages and the API."""
    allowed = FREE_FIELDS + GATED_FIELDS if can_see_fix else FREE_FIELDS
    return {key: entry_data[key] for key in allowed if key in entry_data}


def locked_fields(entry_data: Mapping[str, object], *, can_see_fix: bool) -> list[str]:
    """The fields of this entry the reader may not see, to say what signing up adds."""
    if can_see_fix:
        return []
    return [key for key in GATED_FIELDS if key in entry_data]


def current_version() -> str:
    """The current catalogue version, or "" before the first load.

    Every diagnosis asks (current_engine; the pipeline's claim reads CURRENT_VERSION_SQL in its
    own statement instead), so that an admin's edit reaches the next one with no cache to go
    stale: one indexed lookup, in SQL of its own because Django's query compilation cost more
    than the query.
    """
    rows = sql.fetch_all(f"SELECT {CURRENT_VERSION_SQL}", [])
    return version_from(rows[0][0])


# The current version as a scalar subquery (NULL before the first load), for a statement that
# reads it with more besides: the pipeline's claim (diagnosis.services.lifecycle).
CURRENT_VERSION_SQL = "(SELECT version FROM encyclopedia_catalogueversion ORDER BY id DESC LIMIT 1)"


def version_from(value: object) -> str:
    """current_version's answer from CURRENT_VERSION_SQL's value in a row."""
    return str(value) if value else ""


def current_catalogue() -> tuple[str, list[JSONObject]]:
    """(version, entries' data as in the YAML files, sorted by slug) in two queries."""
    version = current_version()
    # Sorted in Python: the database collation may order "-" differently, and the version digest
    # and the engine must see the same order everywhere.
    entries: list[JSONObject] = sorted(
        Entry.objects.values_list("data", flat=True), key=lambda e: str(e["slug"])
    )
    return version, entries


def current_entries() -> tuple[str, list[CatalogueEntry]]:
    """current_catalogue, decoded into typed entries (under a millisecond for the catalogue;
    the rows were checked on the way in, by load_catalogue or the admin)."""
    version, entries = current_catalogue()
    return version, [decode_entry(data, source=str(data["slug"])) for data in entries]


def get_entry(slug: str) -> Entry:
    return get_object_or_404(Entry, slug=slug)


def list_entries(
    *, category: str | None = None, tag: str | None = None, severity: str | None = None
) -> QuerySet[Entry]:
    entries = Entry.objects.order_by("category", "slug")
    if category:
        entries = entries.filter(category=category)
    if severity:
        entries = entries.filter(severity=severity)
    if tag:
        if connection.features.supports_json_field_contains:
            entries = entries.filter(tags__contains=[tag])
        else:
            # SQLite (the embedded default) has no JSON containment; the catalogue is small.
            ids = [pk for pk, tags in entries.values_list("id", "tags") if tag in tags]
            entries = entries.filter(id__in=ids)
    return entries


def entries_by_category(entries: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        groups.setdefault(entry.category, []).append(entry)
    rank = {name: i for i, name in enumerate(CATEGORIES)}  # the schema's order
    return sorted(groups.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def related_entries(entry: Entry) -> list[Entry]:
    slugs = list(entry.data.get("related", []))
    found = {e.slug: e for e in Entry.objects.filter(slug__in=slugs).only("slug", "title")}
    return [found[slug] for slug in slugs if slug in found]


_engine_lock = threading.Lock()
_engine_cache: dict[str, Engine] = {}


def current_engine(version: str | None = None) -> Engine:
    """The matching engine over the current catalogue, compiled once per catalogue version.

    Search and the pipeline's workers share it; one query per call tells whether an admin edit
    made a new version, unless the caller has just read the current version itself (`version`:
    the pipeline's claim reads it in its own statement). Before the first `load_catalogue` the
    shipped files are used.
    """
    from rootcause.engine import Engine, get_engine  # heavy to import; pages without search skip it

    if version is None:
        version = current_version()
    if not version:
        return get_engine()
    engine = _engine_cache.get(version)
    if engine is None:
        with _engine_lock:
            version, entries = current_entries()
            engine = _engine_cache.get(version)
            if engine is None:
                engine = Engine(entries)
                # Keep only the current version: an old engine is never asked again.
                _engine_cache.clear()
                _engine_cache[version] = engine
    return engine


def search_entries(text: str, *, limit: int = 10) -> list[SearchMatch]:
    """Entries whose fingerprints match pasted error text, best first, with the lines that matched.

    Uses the pipeline's matcher, built once per catalogue version and process.
    """
    if len(text.encode("utf-8", errors="replace")) > SEARCH_MAX_BYTES:
        raise PayloadTooLarge(
            f"Pasted text is limited to {SEARCH_MAX_BYTES // 1024} KiB; "
            "submit whole logs for diagnosis instead."
        )
    if not text.strip():
        return []
    found = current_engine().search(text, limit=limit)
    seen = {match.slug for match in found}
    # The fingerprints are case-sensitive and want error text; a reader also types keywords
    # ("NCCL timeout") or pastes a line in another case. Those find entries by their title, slug,
    # tags and signatures, after the fingerprints' matches.
    for match in _text_matches(text):
        if len(found) >= limit:
            break
        if match.slug not in seen:
            seen.add(match.slug)
            found.append(match)
    return found


_WORD_RE = re.compile(r"[a-z0-9_.]+")
# Keyword search is for a short query; a longer text is error text, matched by signature.
KEYWORD_QUERY_MAX_CHARS = 120
KEYWORD_QUERY_MAX_WORDS = 6
# Lines of pasted text compared with the signatures (the engine has read all of them already).
SIGNATURE_SCAN_LINES = 2000


# A pasted line shorter than this is too common to point to an entry by itself.
SIGNATURE_MIN_CHARS = 24
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


def _normal(line: str) -> str:
    """A line compared without case and numbers (sizes, pids and ranks differ from run to run)."""
    return _NUMBER_RE.sub("#", line.strip().lower())


def _text_matches(text: str) -> list[SearchMatch]:
    """Entries found case-insensitively: every keyword of a short query in the entry's title,
    slug, category, tags or signatures, or a signature inside a pasted line."""
    _, entries = current_entries()
    matches: list[SearchMatch] = []
    query = text.strip()
    words = _WORD_RE.findall(query.lower())
    keyword_query = (
        "\n" not in query
        and len(query) <= KEYWORD_QUERY_MAX_CHARS
        and 0 < len(words) <= KEYWORD_QUERY_MAX_WORDS
    )
    lines = text.splitlines()[:SIGNATURE_SCAN_LINES]
    normal_lines = [_normal(line) for line in lines]
    for entry in entries:
        title = entry.title
        signatures = entry.signatures
        if keyword_query:
            fields = [
                ("title", title),
                ("slug", entry.slug),
                ("category", entry.category),
                *(("tag", t) for t in entry.tags),
                *(("signature", s) for s in signatures),
            ]
            haystack = " ".join(text.replace("-", " ") for _, text in fields).lower()
            if all(word in haystack for word in words):
                # The query's line, and each field of the entry that names one of its words.
                in_title = all(word in f"{title} {entry.slug}".lower() for word in words)
                shown = [
                    MatchedLine(line=1, text=query, entry_field=name, entry_text=field_text)
                    for name, field_text in fields
                    if any(w in field_text.replace("-", " ").lower() for w in words)
                ]
                matches.append(
                    SearchMatch(
                        slug=entry.slug,
                        title=title,
                        score=0.5 if in_title else 0.3,
                        lines=[EvidenceLine(line=1, text=query)],
                        matched=shown[:6],
                    )
                )
                continue
        stems = [(_normal(sig), sig) for sig in signatures]
        pairs = [
            MatchedLine(
                line=number, text=lines[number - 1], entry_field="signature", entry_text=sig
            )
            for number, line in enumerate(normal_lines, start=1)
            if len(line) >= SIGNATURE_MIN_CHARS
            for stem, sig in stems
            if len(stem) >= SIGNATURE_MIN_CHARS and (stem[:60] in line or line in stem)
        ]
        if pairs:
            numbers = sorted({p.line for p in pairs})[:6]
            matches.append(
                SearchMatch(
                    slug=entry.slug,
                    title=title,
                    score=0.4,
                    lines=[EvidenceLine(line=n, text=lines[n - 1]) for n in numbers],
                    matched=pairs[:6],
                )
            )
    matches.sort(key=lambda m: -m.score)
    return matches
