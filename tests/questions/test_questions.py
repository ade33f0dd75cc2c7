"""Follow-up questions: answered from the catalogue entry's sections with links, plainly nothing
when nothing is known, kept on the thread, Scale only, the organisation's diagnoses only; and the
evaluation set's figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from billing_tiers.models import QuotaUsage
from diagnosis.models import Diagnosis
from encyclopedia.services import load_catalogue
from questions.answers import evaluate
from rootcause.catalogue import entry_data, load_entries

pytestmark = pytest.mark.django_db

# As data, the form diagnosis.questions reads.
SHIPPED: dict[str, dict[str, Any]] = {entry.slug: entry_data(entry) for entry in load_entries()}


@pytest.fixture
def catalogue(db: Any) -> None:
    oom = SHIPPED["optimizer-state-oom"]
    load_catalogue(entries=[oom, *(SHIPPED[slug] for slug in oom["related"])])


def _done(organization: Any) -> Diagnosis:
    return Diagnosis.objects.create(
        organization=organization,
        source="api",
        size_bytes=10,
        status=Diagnosis.Status.DONE,
        outcome="diagnosed",
        failure_slug="optimizer-state-oom",
    )


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def _url(diagnosis: Diagnosis) -> str:
    return f"/api/v1/diagnoses/{diagnosis.id}/questions"


def test_an_answer_quotes_the_sections_it_used_with_links(catalogue, acme_scale, alice):
    diagnosis = _done(acme_scale)
    client = _client(alice)
    usage_before = QuotaUsage.objects.count()

    response = client.post(
        _url(diagnosis), {"question": "Why did this config work with SGD?"}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    first = body["citations"][0]
    assert (first["slug"], first["section"]) == ("optimizer-state-oom", "faq-1")
    assert first["link"] == "/encyclopedia/optimizer-state-oom/#faq-1"
    assert "SGD" in body["answer"]
    assert QuotaUsage.objects.count() == usage_before  # no quota

    thread = client.get(_url(diagnosis)).json()["results"]
    assert [q["question"] for q in thread] == ["Why did this config work with SGD?"]


def test_a_question_keeps_its_lines_and_loses_hidden_characters(catalogue, acme_scale, alice):
    diagnosis = _done(acme_scale)
    client = _client(alice)
    asked = client.post(
        _url(diagnosis), {"question": "Why\u202e SGD?\r\nAnd Adam?\x07"}, format="json"
    )
    assert asked.status_code == 201, asked.content
    assert asked.json()["question"] == "Why SGD?\nAnd Adam?"

    nothing = client.post(_url(diagnosis), {"question": "\u200b\u2066"}, format="json")
    assert nothing.status_code == 400
    assert nothing["Content-Type"] == "application/problem+json"


def test_it_says_plainly_when_nothing_is_known(catalogue, acme_scale, alice):
    response = _client(alice).post(
        _url(_done(acme_scale)), {"question": "What is the capital of France?"}, format="json"
    )

    body = response.json()
    assert body["citations"] == []
    assert body["answer"].startswith("Nothing we know answers this")


def test_questions_are_scale_only_and_the_refusal_names_the_tier(catalogue, acme, alice):
    response = _client(alice).post(_url(_done(acme)), {"question": "Why?"}, format="json")

    assert response.status_code == 403
    assert "Scale" in response.json()["detail"]


def test_another_organisations_diagnosis_is_404(catalogue, acme_scale, umbrella, alice):
    response = _client(alice).post(_url(_done(umbrella)), {"question": "SGD?"}, format="json")

    assert response.status_code == 404


def test_the_evaluation_set_has_forty_questions_and_most_are_answered_first(catalogue):
    cases = json.loads((Path(__file__).parents[2] / "bench" / "questions.json").read_text())
    report = evaluate(cases, list(SHIPPED.values()))

    assert report["questions"] >= 40
    assert report["first_right"] / report["questions"] >= 0.75
