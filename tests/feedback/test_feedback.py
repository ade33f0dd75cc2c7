""" "Was this right?": the API, the result page's form, the admin's review, the exported corpus
and the confirmation rate on the encyclopedia entry."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from bench.eval import evaluate
from diagnosis.models import Diagnosis
from encyclopedia.selectors import current_engine
from feedback.models import Feedback
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _diagnosed(api: Any, capture: Any, **headers: Any) -> dict[str, Any]:
    with capture(execute=True):
        response = api.post(URL, data=OOM_LOG.encode(), content_type="text/plain", **headers)
    assert response.status_code == 202, response.content
    return response.json()


@pytest.fixture
def acme_diagnosis(acme_api, django_capture_on_commit_callbacks) -> str:
    body = _diagnosed(acme_api, django_capture_on_commit_callbacks)
    assert Diagnosis.objects.get(id=body["id"]).failure_slug == "optimizer-state-oom"
    return body["id"]


def _feedback(api: Any, diagnosis_id: str, query: str = "", **data: Any) -> Any:
    return api.post(f"{URL}/{diagnosis_id}/feedback{query}", data, format="json")


# --- The API -----------------------------------------------------------------------------------


def test_right_labels_the_log_with_the_diagnosed_class(acme_api, acme_diagnosis):
    answer = _feedback(acme_api, acme_diagnosis, verdict="right")

    assert answer.status_code == 201, answer.content
    assert answer.json()["verdict"] == "right"
    assert answer.json()["correct_class"] == "optimizer-state-oom"
    stored = Feedback.objects.get(diagnosis_id=acme_diagnosis)
    assert (stored.diagnosed_slug, stored.correct_slug) == ("optimizer-state-oom",) * 2
    assert acme_api.get(f"{URL}/{acme_diagnosis}/feedback").json()["verdict"] == "right"


def test_wrong_with_the_right_class_and_a_masked_note(acme_api, acme_diagnosis):
    note = f"it was activations, see {PLANTED_SECRETS['host']} as {PLANTED_SECRETS['email']}"
    answer = _feedback(
        acme_api, acme_diagnosis, verdict="wrong", correct_class="activation-oom", note=note
    )

    assert answer.status_code == 201, answer.content
    stored = Feedback.objects.get(diagnosis_id=acme_diagnosis)
    assert stored.correct_slug == "activation-oom"
    assert stored.note.startswith("it was activations, see ")
    assert PLANTED_SECRETS["host"] not in stored.note
    assert PLANTED_SECRETS["email"] not in stored.note


def test_a_second_answer_replaces_the_first_and_goes_back_to_review(acme_api, acme_diagnosis):
    assert _feedback(acme_api, acme_diagnosis, verdict="right").status_code == 201
    Feedback.objects.update(review=Feedback.Review.ACCEPTED)

    again = _feedback(acme_api, acme_diagnosis, verdict="wrong")

    assert again.status_code == 200
    stored = Feedback.objects.get()
    assert (stored.verdict, stored.correct_slug, stored.review) == ("wrong", "", "pending")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({}, "verdict"),
        ({"verdict": "maybe"}, "verdict"),
        ({"verdict": "wrong", "correct_class": "no-such-class"}, "no class of the catalogue"),
        ({"verdict": "wrong", "correct_class": "optimizer-state-oom"}, "the class diagnosed"),
        ({"verdict": "right", "correct_class": "activation-oom"}, "answer wrong"),
        ({"verdict": "right", "note": "x" * 1001}, "note"),
    ],
)
def test_bad_answers_are_problems_that_say_why(acme_api, acme_diagnosis, data, says):
    answer = _feedback(acme_api, acme_diagnosis, **data)

    assert answer.status_code == 400, answer.content
    assert answer["Content-Type"] == "application/problem+json"
    assert says in json.dumps(answer.json())
    assert not Feedback.objects.exists()


def test_another_organisations_diagnosis_is_404(umbrella_api, acme_diagnosis, api):
    answer = _feedback(umbrella_api, acme_diagnosis, verdict="wrong")

    assert answer.status_code == 404
    assert answer["Content-Type"] == "application/problem+json"
    assert umbrella_api.get(f"{URL}/{acme_diagnosis}/feedback").status_code == 404
    assert _feedback(api, acme_diagnosis, verdict="right").status_code == 404  # nobody
    assert not Feedback.objects.exists()


def test_a_read_only_token_cannot_answer(acme, alice, acme_diagnosis):
    from rest_framework.test import APIClient

    from accounts.services import create_api_token

    _, key = create_api_token(
        organization=acme, created_by=alice, name="ro", scopes=["diagnoses:read"]
    )
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    assert _feedback(reader, acme_diagnosis, verdict="right").status_code == 403


def test_an_unfinished_diagnosis_is_a_conflict(acme_api, acme):
    queued = _queued(acme_api)

    answer = _feedback(acme_api, queued, verdict="right")

    assert answer.status_code == 409
    assert "no result yet" in answer.json()["detail"]


def _queued(api: Any) -> str:
    response = api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")
    assert response.status_code == 202
    return response.json()["id"]


def test_a_visitor_answers_for_their_own_diagnosis_with_its_key(
    api, django_capture_on_commit_callbacks
):
    body = _diagnosed(api, django_capture_on_commit_callbacks, REMOTE_ADDR="203.0.113.9")
    key = body["access_key"]

    assert _feedback(api, body["id"], verdict="right").status_code == 404
    assert _feedback(api, body["id"], "?key=wrong", verdict="right").status_code == 404
    answer = _feedback(api, body["id"], f"?key={key}", verdict="right")

    assert answer.status_code == 201, answer.content
    assert Feedback.objects.get().organization is None


# --- The result page ---------------------------------------------------------------------------


def test_the_result_page_asks_and_records_the_answer(
    acme, alice, django_capture_on_commit_callbacks
):
    page = Client()
    page.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        diagnosis_id = page.post("/", {"log_text": OOM_LOG})["Location"].split("/")[2]

    before = page.get(f"/diagnoses/{diagnosis_id}/").content.decode()
    assert "Was this right?" in before
    assert 'value="activation-oom"' in before  # the classes to pick from

    sent = page.post(
        f"/diagnoses/{diagnosis_id}/feedback/",
        {"verdict": "wrong", "correct_class": "activation-oom", "note": "activations"},
    )
    assert sent.status_code == 302
    assert sent["Location"] == f"/diagnoses/{diagnosis_id}/#feedback"
    after = page.get(f"/diagnoses/{diagnosis_id}/").content.decode()
    assert 'id="feedback-given"' in after
    assert "Thank you" in after
    assert Feedback.objects.get().correct_slug == "activation-oom"


def test_a_visitor_answers_on_the_page_and_returns_to_the_keyed_link(
    client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        location = urlsplit(client.post("/", {"log_text": OOM_LOG})["Location"])
    key = parse_qs(location.query)["key"][0]
    page = client.get(f"{location.path}?key={key}").content.decode()
    assert f'name="key" value="{key}"' in page

    sent = client.post(f"{location.path}feedback/", {"verdict": "right", "key": key})

    assert sent["Location"] == f"{location.path}?key={key}#feedback"
    assert Feedback.objects.get().verdict == "right"
    refused = client.post(f"{location.path}feedback/", {"verdict": "right", "key": "x" + key})
    assert refused.status_code == 404


def test_an_outsider_cannot_answer_on_the_page(charlie, umbrella, acme_diagnosis):
    page = Client()
    page.force_login(charlie)

    sent = page.post(f"/diagnoses/{acme_diagnosis}/feedback/", {"verdict": "right"})

    assert sent.status_code == 404
    assert not Feedback.objects.exists()


# --- Staff's review, the corpus and the entry's figure ---------------------------------------


@pytest.fixture
def staff_client(db) -> Client:
    staff = get_user_model().objects.create_superuser("staff", "staff@rootcause.example", "pw")
    client = Client()
    client.force_login(staff)
    return client


def test_staff_review_verdicts_in_the_admin(staff_client, acme_api, acme_diagnosis):
    _feedback(acme_api, acme_diagnosis, verdict="right")
    feedback = Feedback.objects.get()

    listing = staff_client.get("/admin/feedback/feedback/")
    assert listing.status_code == 200
    assert "optimizer-state-oom" in listing.content.decode()
    change = staff_client.get(f"/admin/feedback/feedback/{feedback.pk}/change/")
    assert "CUDA out of memory" in change.content.decode()  # the masked evidence beside it

    staff_client.post(
        "/admin/feedback/feedback/",
        {"action": "reject", "_selected_action": [str(feedback.pk)]},
    )
    feedback.refresh_from_db()
    assert feedback.review == "rejected"
    assert feedback.reviewed_by is not None


def test_the_export_is_a_corpus_that_the_evaluation_scores(
    acme_api, acme_diagnosis, django_capture_on_commit_callbacks, tmp_path: Path
):
    _feedback(acme_api, acme_diagnosis, verdict="right")
    second = _diagnosed(acme_api, django_capture_on_commit_callbacks, HTTP_IDEMPOTENCY_KEY="2")
    _feedback(acme_api, second["id"], verdict="wrong", correct_class="activation-oom")
    third = _diagnosed(acme_api, django_capture_on_commit_callbacks, HTTP_IDEMPOTENCY_KEY="3")
    _feedback(acme_api, third["id"], verdict="wrong")  # no class named: no label

    out = io.StringIO()
    call_command("export_feedback", str(tmp_path), stdout=out)

    assert "wrote 2 labelled logs" in out.getvalue()
    labels = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [label["slug"] for label in labels] == ["optimizer-state-oom", "activation-oom"]
    for label in labels:
        text = (tmp_path / label["file"]).read_text()
        assert "CUDA out of memory" in text
        assert not any(secret in text for secret in PLANTED_SECRETS.values())
    report = evaluate(tmp_path, current_engine())  # bench/eval.py, the test catalogue
    assert report["files"] == 2
    assert report["top1_count"] == 1  # the confirmed one right, the corrected one a miss
    assert report["misses"][0]["expected"] == "activation-oom"

    Feedback.objects.filter(correct_slug="activation-oom").update(review="accepted")
    call_command("export_feedback", str(tmp_path), "--accepted-only", stdout=io.StringIO())
    accepted = (tmp_path / "labels.jsonl").read_text().splitlines()
    assert [json.loads(line)["slug"] for line in accepted] == ["activation-oom"]


def test_the_entry_shows_how_often_its_diagnoses_were_confirmed(
    client, acme_api, acme_diagnosis, django_capture_on_commit_callbacks
):
    page = "/encyclopedia/optimizer-state-oom/"
    assert "No one has rated a diagnosis of this class yet" in client.get(page).content.decode()

    _feedback(acme_api, acme_diagnosis, verdict="right")
    for n in (2, 3):
        other = _diagnosed(
            acme_api, django_capture_on_commit_callbacks, HTTP_IDEMPOTENCY_KEY=str(n)
        )
        _feedback(acme_api, other["id"], verdict="right" if n == 2 else "wrong")

    text = client.get(page).content.decode()
    assert "<strong>2 of 3</strong> (67 %)" in text
    Feedback.objects.filter(verdict="wrong").update(review="rejected")
    assert "<strong>2 of 2</strong> (100 %)" in client.get(page).content.decode()


def test_deleting_the_diagnosis_deletes_its_feedback(alice, acme, acme_api, acme_diagnosis):
    _feedback(acme_api, acme_diagnosis, verdict="right")
    page = Client()
    page.force_login(alice)

    page.post(f"/diagnoses/{acme_diagnosis}/delete/")

    assert not Feedback.objects.exists()
