"""Invitations by e-mail: the API, the e-mail, and joining from the link (with or without an
account); signed, expiring, single use, bound to the invited address."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import unquote

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts.models import Invitation, Membership
from accounts.selectors import has_verified_email

INVITATIONS = "/api/v1/organization/invitations"
ACCEPT = "/accounts/invitations/accept/"


@pytest.fixture(autouse=True)
def _site_url(settings):
    settings.SITE_URL = "http://testserver"


def _invite(client, capture, email="ada@lovelace.example", role="member", url=INVITATIONS):
    with capture(execute=True):
        return client.post(url, {"email": email, "role": role}, format="json")


def _token(message) -> str:
    match = re.search(r"http://testserver/accounts/invitations/accept/\?token=(\S+)", message.body)
    assert match, message.body
    return unquote(match.group(1))


def test_an_admin_invites_by_email_and_the_link_is_in_the_email_only(
    acme_with_admin, dave, session_api, django_capture_on_commit_callbacks
):
    response = _invite(session_api(dave), django_capture_on_commit_callbacks, role="admin")

    assert response.status_code == 201
    body = response.json()
    assert body["email"] == "ada@lovelace.example"
    assert body["role"] == "admin"
    assert body["status"] == "pending"
    assert body["invited_by"] == "dave@acme.example"
    assert body["expired"] is False
    assert "token" not in str(body)
    assert "link" not in body
    (message,) = mail.outbox
    assert message.to == ["ada@lovelace.example"]
    assert "Acme" in message.subject
    assert "dave@acme.example" in message.body
    assert _token(message)


def test_post_to_members_invites_too(acme, alice, session_api, django_capture_on_commit_callbacks):
    response = _invite(
        session_api(alice), django_capture_on_commit_callbacks, url="/api/v1/organization/members"
    )
    assert response.status_code == 201
    assert Invitation.objects.get().email == "ada@lovelace.example"


def test_inviting_again_sends_the_pending_invitation_again(
    acme, alice, session_api, django_capture_on_commit_callbacks
):
    client = session_api(alice)
    _invite(client, django_capture_on_commit_callbacks)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(days=1))
    again = _invite(client, django_capture_on_commit_callbacks, email="ADA@lovelace.example")

    assert again.status_code == 201
    invitation = Invitation.objects.get()
    assert invitation.expires_at > timezone.now()
    assert len(mail.outbox) == 2


def test_inviting_a_member_or_as_owner_or_a_non_address_is_refused(acme, alice, session_api):
    client = session_api(alice)
    assert client.post(INVITATIONS, {"email": "bob@acme.example"}).status_code == 409
    assert client.post(INVITATIONS, {"email": "x@y.example", "role": "owner"}).status_code == 400
    assert client.post(INVITATIONS, {"email": "not an address"}).status_code == 400


def test_members_and_tokens_cannot_invite_or_list(acme, bob, acme_api, session_api):
    for client in (session_api(bob), acme_api):
        assert client.get(INVITATIONS).status_code == 403
        assert client.post(INVITATIONS, {"email": "x@y.example"}, format="json").status_code == 403
    assert not Invitation.objects.exists()


def test_list_and_withdraw_with_404_across_organisations(
    acme,
    umbrella,
    alice,
    charlie,
    session_api,
    django_capture_on_commit_callbacks,
    django_assert_num_queries,
):
    _invite(session_api(alice), django_capture_on_commit_callbacks)
    invitation = Invitation.objects.get()
    client = session_api(alice)
    client.get(INVITATIONS)

    with django_assert_num_queries(5):  # session, user, membership, count, page
        listed = client.get(INVITATIONS).json()
    assert [row["id"] for row in listed["results"]] == [str(invitation.id)]

    assert session_api(charlie).delete(f"{INVITATIONS}/{invitation.id}").status_code == 404
    assert session_api(charlie).get(INVITATIONS).json()["count"] == 0
    assert client.delete(f"{INVITATIONS}/{invitation.id}").status_code == 204
    assert Invitation.objects.get().status == "revoked"
    assert client.get(INVITATIONS).json()["count"] == 0


def test_a_newcomer_signs_up_from_the_link_then_joins_verified(
    acme, alice, session_api, django_capture_on_commit_callbacks
):
    _invite(session_api(alice), django_capture_on_commit_callbacks)
    token = _token(mail.outbox[0])
    browser = Client()

    page = browser.get(ACCEPT, {"token": token})
    html = page.content.decode()
    assert page.status_code == 200
    assert "Acme" in html
    assert "alice@acme.example" in html
    assert "/accounts/signup/?email=ada%40lovelace.example" in html

    password = "correct horse battery staple"
    with django_capture_on_commit_callbacks(execute=True):
        signed_up = browser.post(
            "/accounts/signup/",
            {
                "email": "ada@lovelace.example",
                "password1": password,
                "password2": password,
                "next": f"{ACCEPT}?token={token}",
            },
        )
    assert signed_up["Location"].startswith(ACCEPT)
    joined = browser.post(ACCEPT, {"token": token})

    assert joined["Location"] == "/settings/"
    ada = User.objects.get(email="ada@lovelace.example")
    assert Membership.objects.get(organization=acme, user=ada).role == "member"
    assert has_verified_email(ada)  # the link reached her inbox
    settings_page = browser.get("/settings/").content.decode()
    assert "<strong>Acme</strong>" in settings_page  # she now acts for Acme
    assert Invitation.objects.get().status == "accepted"


def test_the_link_works_once(
    acme, alice, charlie, session_api, web, django_capture_on_commit_callbacks
):
    _invite(
        session_api(alice), django_capture_on_commit_callbacks, email="charlie@umbrella.example"
    )
    token = _token(mail.outbox[0])
    browser = web(charlie)

    assert browser.post(ACCEPT, {"token": token}).status_code == 302
    again = browser.post(ACCEPT, {"token": token})
    assert again.status_code == 400
    assert "already been used" in again.content.decode()
    assert Membership.objects.filter(organization=acme, user=charlie).count() == 1


def test_only_the_invited_address_may_accept(
    acme, alice, charlie, session_api, web, django_capture_on_commit_callbacks
):
    _invite(session_api(alice), django_capture_on_commit_callbacks)
    response = web(charlie).post(ACCEPT, {"token": _token(mail.outbox[0])})

    assert response.status_code == 200
    assert "was sent to ada@lovelace.example" in response.content.decode()
    assert not Membership.objects.filter(organization=acme, user=charlie).exists()


def test_withdrawn_expired_and_tampered_links_are_refused(
    acme, alice, charlie, settings, session_api, web, django_capture_on_commit_callbacks
):
    _invite(
        session_api(alice), django_capture_on_commit_callbacks, email="charlie@umbrella.example"
    )
    token = _token(mail.outbox[0])
    browser = web(charlie)

    assert browser.get(ACCEPT, {"token": token[:-2] + "xx"}).status_code == 400
    assert browser.get(ACCEPT).status_code == 400

    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = browser.post(ACCEPT, {"token": token})
    assert expired.status_code == 400
    assert "expired" in expired.content.decode()

    Invitation.objects.update(expires_at=timezone.now() + timedelta(days=1), status="revoked")
    withdrawn = browser.post(ACCEPT, {"token": token})
    assert withdrawn.status_code == 400
    assert "withdrawn" in withdrawn.content.decode()

    Invitation.objects.update(status="pending")
    settings.INVITATION_MAX_AGE = -1  # the signature's own age limit
    assert browser.post(ACCEPT, {"token": token}).status_code == 400
    assert not Membership.objects.filter(organization=acme, user=charlie).exists()
