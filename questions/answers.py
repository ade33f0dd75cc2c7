"""How a follow-up question on a diagnosis is answered: from what the catalogue knows.

Retrieval, not generation: the diagnosis's catalogue entry and its related entries are cut into
sections (quick answer, mechanism, what to observe, symptoms, checklist, root causes, fix,
prevention, verification, each FAQ item) plus the diagnosis's masked evidence, ranked by BM25
(`rank_bm25`) against the question, and the best sections are quoted with links. Below a minimum
score the answer says plainly that nothing relevant is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]  # ships no type hints

from diagnosis.models import Diagnosis
from encyclopedia.models import Entry

# Sections quoted per answer, and the BM25 score under which a section is not evidence.
MAX_QUOTES = 3
MIN_SCORE = 1.5

# A catalogue entry as stored (Entry.data, rootcause.catalogue.entry_data): JSON read by its known
# keys and nested lists (faq, related), which a JSON union would make a cast at every read.
EntryData = dict[str, Any]


class Case(TypedDict):
    """A question of bench/questions.json: the diagnosed slug and the section expected first."""

    slug: str
    question: str
    expected: str


class Figures(TypedDict):
    questions: int
    first_right: int
    misses: list[dict[str, str]]


SECTION_TITLES = {
    "quick_answer": "Quick answer",
    "mechanism": "Mechanism",
    "observe": "What to look for",
    "symptoms": "Symptoms",
    "checklist": "Checklist",
    "root_causes": "Root causes",
    "fix": "Fix",
    "prevention": "Prevention",
    "verification": "Verification",
}
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "my",
        "of",
        "on",
        "or",
        "should",
        "so",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True)
class Section:
    slug: str  # the catalogue entry, or "" for the diagnosis's evidence
    key: str  # quick_answer, mechanism, ..., faq-1, evidence
    title: str
    text: str

    @property
    def link(self) -> str:
        return f"/encyclopedia/{self.slug}/#{self.key}" if self.slug else ""


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(_text(v) for v in value.values())
    return ""


def sections_of(entry: EntryData) -> list[Section]:
    slug, title = entry["slug"], entry.get("title", entry["slug"])
    found = [
        Section(slug, key, f"{title}: {name}", _text(entry[key]))
        for key, name in SECTION_TITLES.items()
        if entry.get(key)
    ]
    for number, item in enumerate(entry.get("faq", []), start=1):
        found.append(Section(slug, f"faq-{number}", f"{title}: FAQ", f"{item['q']}\n{item['a']}"))
    return found


def tokens(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9_]+", text.lower())
    return [w for w in words if w not in _STOPWORDS and len(w) > 1]


@dataclass(frozen=True)
class Hit:
    section: Section
    score: float


def rank_sections(sections: list[Section], question: str) -> list[Hit]:
    """The sections that answer `question`, best first; empty when none scores MIN_SCORE."""
    query = tokens(question)
    if not sections or not query:
        return []
    bm25 = BM25Okapi([tokens(s.text + " " + s.title) or ["_"] for s in sections])
    scores = bm25.get_scores(query)
    ranked = sorted(zip(sections, scores, strict=True), key=lambda pair: -pair[1])
    return [Hit(s, float(score)) for s, score in ranked[:MAX_QUOTES] if score >= MIN_SCORE]


def sections_for(entries: Iterable[EntryData], evidence: str = "") -> list[Section]:
    found = [s for entry in entries for s in sections_of(entry)]
    if evidence:
        found.append(Section("", "evidence", "The log's evidence (masked)", evidence))
    return found


def entries_of(diagnosis: Diagnosis) -> list[EntryData]:
    entry = Entry.objects.filter(slug=diagnosis.failure_slug).first()
    if entry is None:
        return []
    related = list(entry.data.get("related", []))
    others = {e.slug: e.data for e in Entry.objects.filter(slug__in=related)}
    return [entry.data, *(others[slug] for slug in related if slug in others)]


def answer_text(hits: list[Hit]) -> str:
    if not hits:
        return (
            "Nothing we know answers this: neither this failure's catalogue entry, its related "
            "entries nor the log's evidence mention it."
        )
    return "\n\n".join(f"{hit.section.title}: {hit.section.text.strip()}" for hit in hits)


def evaluate(cases: list[Case], entries: list[EntryData]) -> Figures:
    """How often the expected section is quoted first. Each case names the diagnosed `slug`, the
    `question` and the `expected` section as "slug#key" (or "none" when nothing should answer)."""
    by_slug = {e["slug"]: e for e in entries}
    right = 0
    misses: list[dict[str, str]] = []
    for case in cases:
        entry = by_slug[case["slug"]]
        related = [by_slug[s] for s in entry.get("related", []) if s in by_slug]
        hits = rank_sections(sections_for([entry, *related]), case["question"])
        got = f"{hits[0].section.slug}#{hits[0].section.key}" if hits else "none"
        if got == case["expected"]:
            right += 1
        else:
            misses.append({"question": case["question"], "expected": case["expected"], "got": got})
    return Figures(questions=len(cases), first_right=right, misses=misses)
