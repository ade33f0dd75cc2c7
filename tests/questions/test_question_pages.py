"""The follow-up question box under a result (moved from tests/diagnosis/test_alert_pages.py)."""

from __future__ import annotations

import pytest

from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG
from tests.pages import diagnosed_on_the_page, signed_in

pytestmark = pytest.mark.django_db


# --- Follow-up questions on the result page -----------------------------------------------------


def test_the_question_box_answers_with_quoted_sections_and_links(
    acme_scale, alice, django_capture_on_commit_callbacks
):
    page = signed_in(alice)
    diagnosis_id = diagnosed_on_the_page(page, django_capture_on_commit_callbacks, OOM_LOG)

    before = page.get(f"/diagnoses/{diagnosis_id}/").content.decode()
    assert 'id="id_question"' in before

    asked = page.post(
        f"/diagnoses/{diagnosis_id}/questions/", {"question": "How do I fix the memory?"}
    )
    assert asked.status_code == 302
    assert asked["Location"] == f"/diagnoses/{diagnosis_id}/#questions"

    after = page.get(f"/diagnoses/{diagnosis_id}/").content.decode()
    question = Diagnosis.objects.get(id=diagnosis_id).questions.get()
    assert "How do I fix the memory?" in after
    assert question.citations  # the one-entry test catalogue answers it
    for citation in question.citations:
        assert f'href="{citation["link"]}"' in after


def test_other_tiers_see_which_tier_unlocks_questions_and_cannot_ask(
    acme, alice, django_capture_on_commit_callbacks
):
    page = signed_in(alice)
    diagnosis_id = diagnosed_on_the_page(page, django_capture_on_commit_callbacks, OOM_LOG)

    text = page.get(f"/diagnoses/{diagnosis_id}/").content.decode()
    assert 'id="questions-locked"' in text
    assert "Scale" in text
    assert 'id="id_question"' not in text
    refused = page.post(f"/diagnoses/{diagnosis_id}/questions/", {"question": "why?"})
    assert refused.status_code == 403
    assert not Diagnosis.objects.get(id=diagnosis_id).questions.exists()


def test_a_visitor_sees_that_questions_are_for_organisations(
    client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": OOM_LOG})
    assert response.status_code == 302

    text = client.get(response["Location"]).content.decode()
    assert 'id="questions-locked"' in text
    assert 'id="id_question"' not in text
