"""GET /api/v1/me: who is calling and for which organisation."""

from __future__ import annotations

from django.contrib.auth.models import User

from accounts.actors import SESSION_ORGANIZATION
from accounts.models import Domain
from accounts.services import create_organization, mark_email_verified

ME = "/api/v1/me"


def test_a_person_sees_themselves_and_their_organisation(acme, alice, session_api):
    Domain.objects.create(organization=acme, domain="acme.example", created_by=alice)
    mark_email_verified(user=alice)

    body = session_api(alice).get(ME).json()

    assert body["user"] == {"email": "alice@acme.example", "email_verified": True}
    assert body["token"] is None
    organization = body["organization"]
    assert organization["id"] == str(acme.pk)
    assert organization["name"] == "Acme"
    assert organization["role"] == "owner"
    assert organization["verified_domain"] == "acme.example"


def test_the_organisation_follows_the_persons_choice(acme, bob, session_api):
    own = create_organization(name="Bob's own", owner=bob)
    client = session_api(bob)
    assert client.get(ME).json()["organization"]["name"] == "Acme"

    session = client.session
    session[SESSION_ORGANIZATION] = str(own.pk)
    session.save()

    body = client.get(ME).json()
    assert body["organization"]["name"] == "Bob's own"
    assert body["organization"]["role"] == "owner"
    assert body["user"]["email_verified"] is False


def test_a_token_sees_its_organisation_and_scopes_but_no_person(acme, acme_api):
    body = acme_api.get(ME).json()

    assert body["user"] is None
    assert body["token"]["name"] == "ci"
    assert body["token"]["scopes"] == ["diagnoses:read", "diagnoses:write", "encyclopedia:read"]
    assert body["organization"]["role"] is None
    assert body["organization"]["verified_domain"] is None


def test_a_person_with_no_organisation_and_a_visitor(session_api, api, db):
    loner = User.objects.create_user("loner", "loner@example.org", "pw-loner-123")
    assert session_api(loner).get(ME).json()["organization"] is None
    assert api.get(ME).status_code == 401
