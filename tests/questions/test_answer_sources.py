"""Follow-up answers come from this diagnosis first: its own fix (as its result gives it) and its
catalogue entry; another entry is quoted only when the question names it; and every link an answer
gives opens a page that has the anchor it points to (issue 34, item 7)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client

from diagnosis.models import Diagnosis
from encyclopedia.services import load_catalogue
from questions.answers import names_in, sections_of
from rootcause.catalogue import entry_data, load_entries
from tests.pages import diagnosed_on_the_page, signed_in

pytestmark = pytest.mark.django_db

SHIPPED: dict[str, dict[str, Any]] = {entry.slug: entry_data(entry) for entry in load_entries()}
# A real activation OOM in the forward pass (tests/logs: the corpus' own label).
ACTIVATION_OOM = (
    Path(__file__).parents[1]
    / "logs"
    / "activation-oom"
    / "cuda-error-out-of-memory-in-forward.log"
)


@pytest.fixture
def shipped_catalogue(db: Any) -> None:
    load_catalogue(entries=list(SHIPPED.values()))


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


def ids_of(html: str) -> set[str]:
    parser = _Ids()
    parser.feed(html)
    return parser.ids


def _diagnosed(client: Client, capture: Any) -> str:
    diagnosis_id = diagnosed_on_the_page(client, capture, ACTIVATION_OOM.read_text())
    assert Diagnosis.objects.get(id=diagnosis_id).failure_slug == "activation-oom"
    return diagnosis_id


def _ask(client: Client, diagnosis_id: str, question: str) -> list[dict[str, Any]]:
    asked = client.post(f"/diagnoses/{diagnosis_id}/questions/", {"question": question})
    assert asked.status_code == 302, asked.content
    latest = Diagnosis.objects.get(id=diagnosis_id).questions.order_by("-created_at").first()
    assert latest is not None
    return list(latest.citations)


def _walk(client: Client, citations: list[dict[str, Any]]) -> None:
    """Every link opens (200) a page that has the element its fragment names."""
    for citation in citations:
        link = urlsplit(citation["link"])
        assert link.path, citation
        assert link.fragment, citation
        page = client.get(link.path)
        assert page.status_code == 200, citation["link"]
        assert link.fragment in ids_of(page.content.decode()), (
            f"{citation['link']}: no element with id {link.fragment!r} on {link.path}"
        )


def test_an_answer_quotes_this_diagnosis_own_fix_not_a_related_class_faq(
    shipped_catalogue, acme_scale, alice, django_capture_on_commit_callbacks
):
    client = signed_in(alice)
    diagnosis_id = _diagnosed(client, django_capture_on_commit_callbacks)

    citations = _ask(client, diagnosis_id, "Does gradient checkpointing slow training?")

    quoted = {(c["slug"], c["section"]) for c in citations}
    # optimizer-state-oom, a related entry, answers "Does gradient checkpointing help here? No.":
    # not this diagnosis's question, and not named in it.
    assert all(slug in ("", "activation-oom") for slug, _ in quoted), quoted
    assert ("", "fix") in quoted  # this result's own fix, linked on its own page
    fix = next(c for c in citations if c["section"] == "fix")
    assert fix["link"] == f"/diagnoses/{diagnosis_id}/#fix"
    answer = Diagnosis.objects.get(id=diagnosis_id).questions.get().answer
    assert "~30% step time" in answer
    assert "No. Checkpointing trades compute" not in answer
    _walk(client, citations)


def test_another_entry_is_quoted_when_the_question_names_it_after_this_ones_own(
    shipped_catalogue, acme_scale, alice, django_capture_on_commit_callbacks
):
    client = signed_in(alice)
    diagnosis_id = _diagnosed(client, django_capture_on_commit_callbacks)

    citations = _ask(
        client,
        diagnosis_id,
        "Would gradient checkpointing help with optimizer-state-oom instead of activation memory?",
    )

    slugs = [c["slug"] for c in citations]
    assert "optimizer-state-oom" in slugs  # named, so a source
    first_other = slugs.index("optimizer-state-oom")
    assert all(slug in ("", "activation-oom") for slug in slugs[:first_other])  # own ones first
    assert first_other > 0
    _walk(client, citations)


def test_the_evidence_is_linked_to_the_result_page_table(
    shipped_catalogue, acme_scale, alice, django_capture_on_commit_callbacks
):
    client = signed_in(alice)
    diagnosis_id = _diagnosed(client, django_capture_on_commit_callbacks)

    # The evidence is the log's "RuntimeError: CUDA error: out of memory", whose words only the
    # entry's long sections share: asked in them, the one-line evidence ranks.
    citations = _ask(client, diagnosis_id, "Why RuntimeError: CUDA error: out of memory?")

    assert ("", "evidence") in {(c["slug"], c["section"]) for c in citations}
    _walk(client, citations)


def test_every_section_an_answer_can_quote_has_its_anchor_on_the_entry_page(
    shipped_catalogue, alice
):
    client = signed_in(alice)  # a member reads the fix, prevention and verification
    for slug, entry in SHIPPED.items():
        ids = ids_of(client.get(f"/encyclopedia/{slug}/").content.decode())
        sections = sections_of(entry)
        assert sections
        missing = [s.key for s in sections if s.link != f"/encyclopedia/{slug}/#{s.key}"]
        missing += [s.key for s in sections if s.key not in ids]
        assert not missing, f"{slug}: {missing}"


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("is this optimizer-state-oom?", ["optimizer-state-oom"]),
        ("is this optimizer state oom", ["optimizer-state-oom"]),
        ("Could it be Optimizer State Memory Explosion?", ["optimizer-state-oom"]),
        ("does an optimizer-state-oomx exist", []),
        ("how do I stop the OOM?", []),
    ],
)
def test_an_entry_is_named_by_its_slug_in_any_spelling_or_its_title(
    question: str, named: list[str]
) -> None:
    entries = [(slug, str(entry["title"])) for slug, entry in SHIPPED.items()]
    assert names_in(question, entries) == named


def test_the_entry_page_ids_are_the_answer_keys() -> None:
    # The template names each section's id as the key of questions/answers.py.
    template = (
        Path(__file__).parents[2] / "encyclopedia" / "templates" / "encyclopedia" / "entry.html"
    ).read_text()
    for key in (
        "quick_answer",
        "mechanism",
        "observe",
        "symptoms",
        "checklist",
        "root_causes",
        "fix",
        "prevention",
        "verification",
    ):
        assert re.search(rf'<h2 id="{key}"', template), key
    assert 'id="faq-{{ forloop.counter }}"' in template
