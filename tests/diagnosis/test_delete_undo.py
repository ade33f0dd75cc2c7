"""Deleting from the history page: a page asks to confirm, the rows go at once, and the history
offers to put them back, with their feedback, for DELETE_UNDO_SECONDS."""

from __future__ import annotations

import pytest
from django.test import Client

from diagnosis.models import Diagnosis
from diagnosis.services import undo
from feedback.models import Feedback

pytestmark = pytest.mark.django_db


@pytest.fixture
def done(acme) -> Diagnosis:
    diagnosis = Diagnosis.objects.create(
        organization=acme,
        source="web",
        size_bytes=10,
        filename="train.log",
        status="done",
        outcome="diagnosed",
        failure_slug="optimizer-state-oom",
        result={"root_cause": "Adam"},
    )
    Feedback.objects.create(
        diagnosis=diagnosis,
        organization=acme,
        verdict="right",
        diagnosed_slug="optimizer-state-oom",
        correct_slug="optimizer-state-oom",
    )
    return diagnosis


def _manager(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def test_delete_asks_first(alice, done):
    page = _manager(alice)

    asked = page.get(f"/diagnoses/{done.id}/delete/")

    assert asked.status_code == 200
    text = asked.content.decode()
    assert 'id="confirm-delete"' in text
    assert "train.log" in text
    assert f"for {undo.DELETE_UNDO_SECONDS // 60} minutes" in text
    assert Diagnosis.objects.filter(id=done.id).exists()  # asking deleted nothing


def test_a_deletion_is_undone_with_its_feedback(alice, done):
    page = _manager(alice)

    page.post(f"/diagnoses/{done.id}/delete/")
    assert not Diagnosis.objects.exists()
    assert not Feedback.objects.exists()
    history = page.get("/diagnoses/").content.decode()
    assert 'id="undo"' in history

    back = page.post(f"/diagnoses/{done.id}/undo/")

    assert back.status_code == 302
    assert back["Location"] == f"/diagnoses/{done.id}/"
    restored = Diagnosis.objects.get(id=done.id)
    assert restored.result == {"root_cause": "Adam"}
    assert Feedback.objects.get().diagnosis_id == done.id
    assert 'id="undo"' not in page.get("/diagnoses/").content.decode()


def test_past_the_window_the_deletion_is_final(alice, done, monkeypatch):
    page = _manager(alice)
    page.post(f"/diagnoses/{done.id}/delete/")
    from django.core.cache import cache

    cache.delete(undo._key(done.organization_id, done.id))  # as the cache's expiry would

    answer = page.post(f"/diagnoses/{done.id}/undo/", follow=True)

    assert "it is final" in answer.content.decode()
    assert not Diagnosis.objects.exists()


def test_another_organisation_cannot_undo(alice, charlie, umbrella, done):
    _manager(alice).post(f"/diagnoses/{done.id}/delete/")

    _manager(charlie).post(f"/diagnoses/{done.id}/undo/")

    assert not Diagnosis.objects.exists()
