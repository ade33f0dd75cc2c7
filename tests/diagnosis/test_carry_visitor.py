"""A visitor's results carried into the account they create (or sign in to) from the same
browser: into the history, with the fix their tier includes; nobody else's."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from diagnosis.models import Diagnosis
from diagnosis.services.carry import SESSION_VISITOR_DIAGNOSES
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

PASSWORD = "a long pass phrase 42"


def _visit(client: Client, capture) -> tuple[str, str]:
    """A visitor's diagnosis on the page: (its page, its key)."""
    with capture(execute=True):
        response = client.post("/", {"log_text": OOM_LOG})
    assert response.status_code == 302, response.content
    location = urlsplit(response["Location"])
    return location.path, parse_qs(location.query)["key"][0]


def test_signing_up_carries_the_visitors_results_into_the_new_history(
    client, django_capture_on_commit_callbacks
):
    page, key = _visit(client, django_capture_on_commit_callbacks)
    before = client.get(f"{page}?key={key}").content.decode()
    assert 'id="sign-up"' in before
    assert f"/accounts/signup/?next={page}" in before
    assert 'id="fix"' not in before  # a visitor's result has no fix

    with django_capture_on_commit_callbacks(execute=True):
        signed = client.post(
            f"/accounts/signup/?next={page}",
            {"email": "ada@lovelace.example", "password1": PASSWORD, "password2": PASSWORD},
        )

    assert signed.status_code == 302
    assert signed["Location"] == page
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.organization is not None
    assert diagnosis.created_by is not None
    assert diagnosis.created_by.email == "ada@lovelace.example"
    assert (diagnosis.access_key_digest, diagnosis.anonymous_subject) == ("", "")
    assert diagnosis.expires_at is None
    after = client.get(page).content.decode()
    assert 'id="fix"' in after  # the fix their tier includes
    assert "optimizer-state-oom" in client.get("/diagnoses/").content.decode()
    assert client.get(f"{page}?key={key}").status_code == 404  # the visitor's link is spent
    assert SESSION_VISITOR_DIAGNOSES not in client.session


def test_signing_in_carries_them_into_the_organisation_acted_for(
    client, acme, alice, django_capture_on_commit_callbacks
):
    _visit(client, django_capture_on_commit_callbacks)

    client.force_login(alice)

    assert Diagnosis.objects.get().organization == acme


def test_another_browsers_results_and_links_only_opened_stay_where_they_are(
    client, acme, alice, django_capture_on_commit_callbacks
):
    page, key = _visit(Client(), django_capture_on_commit_callbacks)  # someone else's browser
    assert client.get(f"{page}?key={key}").status_code == 200  # opened by its link here

    client.force_login(alice)

    assert Diagnosis.objects.get().organization is None


def test_an_expired_result_is_not_carried(client, acme, alice, django_capture_on_commit_callbacks):
    _visit(client, django_capture_on_commit_callbacks)
    Diagnosis.objects.all().delete()  # purged meanwhile

    client.force_login(alice)

    assert not Diagnosis.objects.exists()
