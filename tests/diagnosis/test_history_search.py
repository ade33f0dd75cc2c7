"""Search in the history (`?q=`, the API and the page): words found in the file name, the CI
job, the failure class or the root cause's text, every word in the same row, within the
caller's organisation only."""

from __future__ import annotations

import pytest
from django.test import Client

from diagnosis.models import Diagnosis

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _row(organization, filename: str, job: str = "", root_cause: str = "", slug: str = "") -> str:
    row = Diagnosis.objects.create(
        organization=organization,
        source="api",
        size_bytes=10,
        filename=filename,
        job=job,
        status=Diagnosis.Status.DONE,
        outcome="diagnosed" if slug else "no_match",
        failure_slug=slug,
        result={"root_cause": root_cause} if root_cause else {},
    )
    return row.filename


@pytest.fixture
def rows(acme, umbrella) -> None:
    _row(acme, "pretrain-7b.log", job="pretrain", root_cause="NCCL watchdog timed out on rank 3")
    _row(
        acme,
        "finetune.log",
        job="lora-sft",
        root_cause="Adam states do not fit",
        slug="optimizer-state-oom",
    )
    _row(acme, "eval.log", job="nightly-eval")
    _row(umbrella, "pretrain-umbrella.log", job="pretrain", root_cause="NCCL watchdog")


@pytest.mark.parametrize(
    ("q", "found"),
    [
        ("pretrain", {"pretrain-7b.log"}),  # the file name and the job; not Umbrella's
        ("NIGHTLY", {"eval.log"}),  # the job, case aside
        ("watchdog", {"pretrain-7b.log"}),  # the root cause's text
        ("optimizer-state", {"finetune.log"}),  # the class
        ("adam fit", {"finetune.log"}),  # every word, anywhere in the row
        ("adam watchdog", set()),
        ("  ", {"pretrain-7b.log", "finetune.log", "eval.log"}),
    ],
)
def test_the_api_searches_the_history(acme_api, rows, q, found):
    answer = acme_api.get(URL, {"q": q})

    assert answer.status_code == 200, answer.content
    assert {row["filename"] for row in answer.json()["results"]} == found


def test_a_search_too_long_is_a_problem(acme_api, rows):
    answer = acme_api.get(URL, {"q": "x" * 201})

    assert answer.status_code == 400
    assert answer["Content-Type"] == "application/problem+json"
    assert "q" in answer.json()["errors"]


def test_the_page_searches_and_keeps_the_words_in_its_box(alice, rows):
    page = Client()
    page.force_login(alice)

    text = page.get("/diagnoses/", {"q": "watchdog"}).content.decode()

    assert "pretrain-7b.log" in text
    assert "finetune.log" not in text
    assert 'value="watchdog"' in text
    assert (
        "No diagnosis matches" in page.get("/diagnoses/", {"q": "nothing-like-it"}).content.decode()
    )
