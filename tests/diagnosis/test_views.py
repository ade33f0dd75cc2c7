from __future__ import annotations

import pytest

from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

# Not transactional: a test that needs the pipeline (enqueued on commit, run eagerly) runs the
# on-commit callbacks of its request itself (see test_api.py).
pytestmark = pytest.mark.django_db


def test_the_home_page_invites_anonymous_visitors_to_sign_in(client):
    response = client.get("/")

    assert response.status_code == 200
    assert b"Sign in" in response.content


def test_a_pasted_log_is_diagnosed_and_shown_masked(
    client, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": OOM_LOG})

    assert response.status_code == 302
    page = client.get(response["Location"])
    text = page.content.decode()
    assert page.status_code == 200
    assert "Optimizer State Memory Explosion" in text
    for value in PLANTED_SECRETS.values():
        assert value not in text


def test_an_empty_form_gets_a_message_not_a_diagnosis(client, alice, acme):
    client.force_login(alice)

    response = client.post("/", {"log_text": ""})

    assert response.status_code == 200
    assert b"Paste a log or choose a file." in response.content
    assert Diagnosis.objects.count() == 0


def test_a_binary_upload_gets_a_message(client, alice, acme):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice)

    response = client.post("/", {"log_file": SimpleUploadedFile("core", b"\x7fELF\x00\x00")})

    assert response.status_code == 200
    assert b"binary file" in response.content


def test_another_organisation_cannot_open_a_diagnosis_page(
    client, alice, acme, charlie, umbrella, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        location = client.post("/", {"log_text": OOM_LOG})["Location"]
    client.force_login(charlie)

    assert client.get(location).status_code == 404
    assert b"optimizer" not in client.get("/diagnoses/").content


def test_someone_without_an_organisation_gets_a_personal_one(client, django_user_model):
    dora = django_user_model.objects.create_user("dora", "dora@example.com", "pw-dora-123")
    client.force_login(dora)

    response = client.post("/", {"log_text": OOM_LOG})

    assert response.status_code == 302
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.organization.memberships.get().user == dora
