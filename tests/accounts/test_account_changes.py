"""A person's own account: changing the e-mail address through a link to the new one, deleting
the account, and an owner deleting the organisation with what it holds (said before it goes)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from accounts.models import Membership, Organization
from accounts.selectors import has_verified_email
from accounts.services import create_api_token
from diagnosis.models import Diagnosis
from tests.pages import signed_in

pytestmark = pytest.mark.django_db

ACCOUNT = "/settings/account/"


@pytest.fixture(autouse=True)
def _site_root(settings):
    settings.SITE_URL = "http://testserver"


def _link(message) -> str:
    match = re.search(r"http://testserver(/\S+)", message.body)
    assert match, message.body
    return match.group(1)


def _diagnosis(organization, user=None) -> Diagnosis:
    return Diagnosis.objects.create(
        organization=organization, created_by=user, source="api", size_bytes=1, status="done"
    )


# --- The address --------------------------------------------------------------------------------


def test_the_address_changes_only_when_the_link_to_the_new_one_is_followed(
    alice, acme, django_capture_on_commit_callbacks
):
    page = signed_in(alice)
    with django_capture_on_commit_callbacks(execute=True):
        asked = page.post(
            "/settings/account/email/",
            {"email": "Alice@New.example", "password": "pw-alice-123"},
        )

    assert asked.status_code == 302
    alice.refresh_from_db()
    assert alice.email == "alice@acme.example"  # nothing changed yet
    to_new = next(m for m in mail.outbox if m.to == ["alice@new.example"])
    notice = next(m for m in mail.outbox if m.to == ["alice@acme.example"])
    assert "alice@new.example" in notice.body
    confirmed = Client().get(_link(to_new))  # read in the new mailbox, maybe signed out

    assert confirmed.status_code == 200
    alice.refresh_from_db()
    assert alice.email == alice.username == "alice@new.example"
    assert has_verified_email(alice)
    signed = Client().post(
        "/accounts/login/", {"username": "alice@new.example", "password": "pw-alice-123"}
    )
    assert signed.status_code == 302  # the new address signs in
    assert Client().get(_link(to_new)).status_code == 400  # spent: the old address is gone


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"email": "new@acme.example", "password": "wrong"}, "not your current password"),
        ({"email": "bob@acme.example", "password": "pw-alice-123"}, "Another account"),
        ({"email": "alice@acme.example", "password": "pw-alice-123"}, "already your address"),
        ({"email": "not-an-address", "password": "pw-alice-123"}, "New e-mail address"),
    ],
)
def test_a_refused_change_says_why_and_sends_nothing(alice, bob, acme, data, says):
    answer = signed_in(alice).post("/settings/account/email/", data)

    assert answer.status_code == 400
    assert says in answer.content.decode()
    assert not mail.outbox


def test_a_link_whose_address_was_taken_meanwhile_is_refused(
    alice, acme, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        signed_in(alice).post(
            "/settings/account/email/", {"email": "x@new.example", "password": "pw-alice-123"}
        )
    User.objects.create_user("x@new.example", "x@new.example", "pw-x-123456")

    answer = Client().get(_link(mail.outbox[0]))

    assert answer.status_code == 409
    alice.refresh_from_db()
    assert alice.email == "alice@acme.example"


# --- Deleting the account ------------------------------------------------------------------------


def test_the_page_says_what_deleting_the_account_deletes(charlie, umbrella, acme, alice):
    Membership.objects.create(organization=acme, user=charlie, role="member")
    _diagnosis(umbrella)
    create_api_token(organization=umbrella, created_by=charlie, name="ci")

    text = signed_in(charlie).get(ACCOUNT).content.decode()

    assert "<strong>Umbrella</strong>, of which you are the only member" in text
    assert "1 diagnoses" in text
    assert "1 api tokens" in text
    assert "your membership of <strong>Acme</strong>: it stays" in text


def test_deleting_the_account_deletes_its_own_organisation_and_leaves_the_others(
    charlie, umbrella, acme, alice
):
    Membership.objects.create(organization=acme, user=charlie, role="member")
    mine = _diagnosis(umbrella, charlie)
    in_acme = _diagnosis(acme, charlie)
    page = signed_in(charlie)

    refused = page.post("/settings/account/delete/", {"password": "wrong"})
    assert refused.status_code == 400
    assert User.objects.filter(pk=charlie.pk).exists()

    done = page.post("/settings/account/delete/", {"password": "pw-c-123"})

    assert done.status_code == 302
    assert not User.objects.filter(pk=charlie.pk).exists()
    assert not Organization.objects.filter(pk=umbrella.pk).exists()
    assert not Diagnosis.objects.filter(pk=mine.pk).exists()
    in_acme.refresh_from_db()
    assert in_acme.created_by is None  # Acme's history keeps it
    assert page.get(ACCOUNT).status_code == 302  # signed out


def test_the_only_owner_of_an_organisation_with_members_must_hand_it_on_first(alice, acme, bob):
    page = signed_in(alice)

    assert 'id="delete-blocked"' in page.get(ACCOUNT).content.decode()
    refused = page.post("/settings/account/delete/", {"password": "pw-alice-123"})

    assert refused.status_code == 400
    assert "only owner of <strong>Acme</strong>" in refused.content.decode()
    assert User.objects.filter(pk=alice.pk).exists()


# --- Deleting the organisation --------------------------------------------------------------


def test_the_owner_deletes_the_organisation_after_reading_what_goes(alice, acme, bob):
    _diagnosis(acme)
    page = signed_in(alice)
    assert "/settings/organization/delete/" in page.get("/settings/").content.decode()

    text = page.get("/settings/organization/delete/").content.decode()
    assert "1 diagnoses" in text
    assert "2 memberships" in text
    wrong = page.post("/settings/organization/delete/", {"name": "acme"})
    assert wrong.status_code == 400
    assert Organization.objects.filter(pk=acme.pk).exists()

    done = page.post("/settings/organization/delete/", {"name": "Acme"})

    assert done.status_code == 302
    assert not Organization.objects.filter(pk=acme.pk).exists()
    assert not Diagnosis.objects.exists()
    assert User.objects.filter(pk__in=[alice.pk, bob.pk]).count() == 2  # the people stay
    assert page.get("/settings/").status_code == 200


def test_an_admin_or_member_cannot_delete_the_organisation(alice, acme, bob):
    Membership.objects.filter(user=bob).update(role="admin")

    assert signed_in(bob).get("/settings/organization/delete/").status_code == 403
    assert (
        signed_in(bob).post("/settings/organization/delete/", {"name": "Acme"}).status_code == 403
    )
    assert Organization.objects.filter(pk=acme.pk).exists()
