"""How a follow-up question on a diagnosis is answered: from what the catalogue knows.

Retrieval, not generation. The sources are this diagnosis's own first: its fix as the result
gives it (with commands written for its log) and its masked evidence, both on the result page,
and its catalogue entry cut into sections (quick answer, mechanism, what to observe, symptoms,
checklist, root causes, prevention, verification, each FAQ item). Another entry is a source only
when the question names it (its slug or its title): a related class's FAQ is not quoted against
this result's own fix. The sections are ranked by BM25 (`rank_bm25`) against the question, this
diagnosis's own before any named entry's, and the best are quoted, each with a link to the anchor
that shows it (the entry page's section ids are these keys; the result page's `#fix` and
`#evidence`). Below a minimum score the answer says plainly that nothing relevant is known.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from django.urls import reverse
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
    slug: str  # the catalogue entry, or "" for the diagnosis's own (its fix, its evidence)
    key: str  # quick_answer, mechanism, ..., faq-1, fix, evidence: the anchor on its page
    title: str
    text: str
    page: str = ""  # the diagnosis's page, for its own sections; an entry's is its slug's

    @property
    def link(self) -> str:
        page = self.page or (f"/encyclopedia/{self.slug}/" if self.slug else "")
        return f"{page}#{self.key}" if page else ""


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


def terms(text: str) -> list[str]:
    """The words, and each two words in a row as one term: a section that has the question's
    phrase ("gradient checkpointing") outranks one that has its words apart."""
    words = tokens(text)
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


@dataclass(frozen=True)
class Hit:
    section: Section
    score: float


def rank_sections(own: list[Section], question: str, named: Sequence[Section] = ()) -> list[Hit]:
    """The sections that answer `question`: this diagnosis's own (`own`) best first, then those
    of the entries the question names; empty when none scores MIN_SCORE. Scored together, so a
    word rare in all of them weighs the same on either side."""
    sections = [*own, *named]
    query = terms(question)
    if not sections or not query:
        return []
    bm25 = BM25Okapi([terms(s.text + " " + s.title) or ["_"] for s in sections])
    scores = [float(score) for score in bm25.get_scores(query)]
    hits = [Hit(s, score) for s, score in zip(sections, scores, strict=True) if score >= MIN_SCORE]
    hits.sort(key=lambda hit: -hit.score)
    mine = {id(s) for s in own}
    own_hits = [hit for hit in hits if id(hit.section) in mine]
    # A named entry's best section, each: the question asked about it, so it is quoted, after
    # this diagnosis's own (which keep at least the first place when they answer at all).
    named_best: dict[str, Hit] = {}
    for hit in hits:
        if id(hit.section) not in mine:
            named_best.setdefault(hit.section.slug, hit)
    room = MAX_QUOTES - min(len(named_best), MAX_QUOTES - 1 if own_hits else MAX_QUOTES)
    quoted = own_hits[:room]
    return [*quoted, *list(named_best.values())[: MAX_QUOTES - len(quoted)]]


def _phrase(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def names_in(question: str, entries: Iterable[tuple[str, str]]) -> list[str]:
    """The slugs of the entries (slug, title) that `question` names: by the slug, in any
    spelling of its separators ("optimizer-state-oom", "optimizer state oom"), or by the title."""
    asked = f" {_phrase(question)} "
    found: dict[str, str] = {}  # slug: the longest of its names the question holds
    for slug, title in entries:
        names = [n for n in (_phrase(slug), _phrase(title)) if n and f" {n} " in asked]
        if names:
            found[slug] = max(names, key=len)
    # A name inside a longer one found ("optimizer state memory" in the title "Optimizer State
    # Memory Explosion") is that one's, not a second entry's.
    return [
        slug
        for slug, name in found.items()
        if not any(name != other and f" {name} " in f" {other} " for other in found.values())
    ]


@dataclass(frozen=True)
class Sources:
    """What a question on one diagnosis is answered from."""

    own: list[Section]  # its fix and evidence, then its entry's sections
    others: list[Section]  # the sections of every other entry the question names


def own_sections(
    entry: EntryData | None, *, fix: str = "", evidence: str = "", page: str = ""
) -> list[Section]:
    """This diagnosis's sections: its own fix (which stands for the entry's: the same steps, its
    commands written for the log), its evidence, and its entry's other sections."""
    found: list[Section] = []
    if fix:
        found.append(Section("", "fix", "This diagnosis: Fix", fix, page))
    if evidence:
        found.append(Section("", "evidence", "The log's evidence (masked)", evidence, page))
    if entry is not None:
        found += [s for s in sections_of(entry) if not (fix and s.key == "fix")]
    return found


def sources_of(diagnosis: Diagnosis, question: str, *, fix: str, evidence: str) -> Sources:
    """The diagnosis's own sections, and those of the other entries the question names."""
    entry = Entry.objects.filter(slug=diagnosis.failure_slug).first()
    page = reverse("diagnosis-detail", args=[diagnosis.id])
    own = own_sections(entry.data if entry else None, fix=fix, evidence=evidence, page=page)
    catalogue = Entry.objects.exclude(slug=diagnosis.failure_slug).values_list("slug", "title")
    named = names_in(question, catalogue)
    others = [
        s
        for other in Entry.objects.filter(slug__in=named).order_by("slug")
        for s in sections_of(other.data)
    ]
    return Sources(own, others)


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
    titles = [(e["slug"], str(e.get("title", e["slug"]))) for e in entries]
    right = 0
    misses: list[dict[str, str]] = []
    for case in cases:
        entry = by_slug[case["slug"]]
        named = [s for s in names_in(case["question"], titles) if s != case["slug"]]
        others = [section for slug in named for section in sections_of(by_slug[slug])]
        hits = rank_sections(own_sections(entry), case["question"], others)
        got = f"{hits[0].section.slug}#{hits[0].section.key}" if hits else "none"
        if got == case["expected"]:
            right += 1
        else:
            misses.append({"question": case["question"], "expected": case["expected"], "got": got})
    return Figures(questions=len(cases), first_right=right, misses=misses)
