"""Who may do what with diagnoses: token scopes, another organisation's ids, roles for delete, and
the organisation chosen in the switcher."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.actors import SESSION_ORGANIZATION
from accounts.models import Membership
from accounts.services import add_member, create_api_token, create_organization
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _token_client(organization, user, *scopes: str) -> APIClient:
    _, secret = create_api_token(
        organization=organization, created_by=user, name="scoped", scopes=scopes
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _session(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def diagnosis(acme) -> Diagnosis:
    return Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)


@pytest.fixture
def dave(acme):
    user = get_user_model().objects.create_user("dave", "dave@acme.example", "pw-dave-123")
    add_member(organization=acme, user=user, role=Membership.Role.ADMIN)
    return user


def test_a_token_without_the_write_scope_cannot_submit(acme, alice):
    reader = _token_client(acme, alice, "diagnoses:read")

    response = reader.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert "diagnoses:write" in response.json()["detail"]
    assert Diagnosis.objects.count() == 0


def test_a_token_without_the_read_scope_cannot_read(acme, alice, diagnosis):
    writer = _token_client(acme, alice, "diagnoses:write")

    for url in (URL, f"{URL}/{diagnosis.id}"):
        response = writer.get(url)
        assert response.status_code == 403, url
        assert "diagnoses:read" in response.json()["detail"]
    assert writer.post(URL, data=OOM_LOG.encode(), content_type="text/plain").status_code == 202


def test_another_organisations_id_is_404_for_reading_and_deleting(
    umbrella_api, charlie, umbrella, diagnosis
):
    owner_elsewhere = _session(charlie)

    for response in (
        umbrella_api.get(f"{URL}/{diagnosis.id}"),
        owner_elsewhere.get(f"{URL}/{diagnosis.id}"),
        owner_elsewhere.delete(f"{URL}/{diagnosis.id}"),
    ):
        assert response.status_code == 404
        assert str(diagnosis.id) not in response.content.decode()
    assert Diagnosis.objects.filter(id=diagnosis.id).exists()


@pytest.mark.parametrize("who", ["bob", "token"])
def test_members_and_tokens_cannot_delete(who, bob, acme_api, diagnosis):
    client = acme_api if who == "token" else _session(bob)

    response = client.delete(f"{URL}/{diagnosis.id}")

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert Diagnosis.objects.filter(id=diagnosis.id).exists()


@pytest.mark.parametrize("who", ["alice", "dave"])
def test_owners_and_admins_delete(who, alice, dave, acme, diagnosis):
    client = _session(alice if who == "alice" else dave)

    response = client.delete(f"{URL}/{diagnosis.id}")

    assert response.status_code == 204
    assert "RateLimit-Remaining" in response
    assert not Diagnosis.objects.filter(id=diagnosis.id).exists()
    assert client.get(f"{URL}/{diagnosis.id}").status_code == 404


def test_the_page_deletes_for_managers_only(client, alice, bob, acme, diagnosis):
    client.force_login(bob)
    assert b"Delete\xe2\x80\xa6</a>" not in client.get("/diagnoses/").content
    assert client.post(f"/diagnoses/{diagnosis.id}/delete/").status_code == 403

    client.force_login(alice)
    assert b"Delete\xe2\x80\xa6</a>" in client.get("/diagnoses/").content
    response = client.post(f"/diagnoses/{diagnosis.id}/delete/", follow=True)

    assert response.redirect_chain == [("/diagnoses/", 302)]
    assert b"was deleted." in response.content
    assert not Diagnosis.objects.exists()


def test_a_person_acts_for_the_organisation_chosen_in_the_switcher(
    bob, acme, django_capture_on_commit_callbacks
):
    own = create_organization(name="Bob's own", owner=bob)
    client = _session(bob)
    session = client.session
    session[SESSION_ORGANIZATION] = str(own.pk)
    session.save()

    response = client.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    assert Diagnosis.objects.get().organization == own
    assert len(client.get(URL).json()["results"]) == 1
    session[SESSION_ORGANIZATION] = str(acme.pk)
    session.save()
    assert client.get(URL).json()["results"] == []
    assert client.get(response["Location"]).status_code == 404
