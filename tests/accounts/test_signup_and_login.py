"""Sign-up, sign-in and out, password reset and e-mail verification, as a person uses them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail, signing
from django.http import HttpRequest
from django.test import Client

from accounts.actors import actor_of
from accounts.models import Membership
from accounts.selectors import has_verified_email

SIGNUP = "/accounts/signup/"
LOGIN = "/accounts/login/"
GOOD_PASSWORD = "correct horse battery staple"


def _signup(client: Client, capture, email="ada@lovelace.example", **extra):
    data = {"email": email, "password1": GOOD_PASSWORD, "password2": GOOD_PASSWORD, **extra}
    with capture(execute=True):
        return client.post(SIGNUP, data)


def _link(message) -> str:
    match = re.search(r"http://testserver(/\S+)", message.body)
    assert match, message.body
    return match.group(1)


@pytest.fixture(autouse=True)
def _site_url(settings, db):
    settings.SITE_URL = "http://testserver"


def test_the_pages_have_the_sites_look_and_real_links(client, db):
    for url in (SIGNUP, LOGIN, "/accounts/password_reset/"):
        html = client.get(url).content.decode()
        assert 'class="brand"' in html
        assert "/encyclopedia/" in html
        assert 'href="/accounts/login/' in html
        assert 'href="/accounts/signup/' in html
        assert "/admin/login/" not in html
    signup = client.get(SIGNUP).content.decode()
    for field in ('name="email"', 'name="password1"', 'name="password2"'):
        assert field in signup


def test_sign_up_signs_in_makes_a_personal_organisation_and_sends_a_link(
    client, django_capture_on_commit_callbacks
):
    response = _signup(client, django_capture_on_commit_callbacks, email="Ada@Lovelace.example")

    assert response.status_code == 302
    user = User.objects.get()
    assert user.username == user.email == "ada@lovelace.example"
    membership = Membership.objects.get(user=user)
    assert membership.role == "owner"
    page = client.get("/settings/")
    assert page.status_code == 200
    assert "ada@lovelace.example" in page.content.decode()
    assert actor_of(page.wsgi_request).organization == membership.organization
    assert not has_verified_email(user)

    (message,) = mail.outbox
    assert message.to == ["ada@lovelace.example"]
    assert "/accounts/verify/" in message.body


def test_sign_up_goes_back_to_next(client, django_capture_on_commit_callbacks, db):
    response = _signup(client, django_capture_on_commit_callbacks, next="/encyclopedia/")
    assert response["Location"] == "/encyclopedia/"
    offsite = Client()
    answer = _signup(
        offsite, django_capture_on_commit_callbacks, email="b@b.example", next="https://evil/"
    )
    assert answer["Location"] == "/"


def test_an_email_is_one_account_whatever_its_case(
    client, alice, django_capture_on_commit_callbacks
):
    response = _signup(client, django_capture_on_commit_callbacks, email="ALICE@acme.example")

    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert User.objects.filter(email__iexact="alice@acme.example").count() == 1


@pytest.mark.parametrize(
    ("password1", "password2", "message"),
    [
        ("short", "short", "too short"),
        ("password123", "password123", "too common"),
        ("12345678901234", "12345678901234", "entirely numeric"),
        ("ada@lovelace.example", "ada@lovelace.example", "too similar"),
        (GOOD_PASSWORD, GOOD_PASSWORD + "!", "differ"),
    ],
)
def test_sign_up_applies_djangos_password_validators(client, db, password1, password2, message):
    response = client.post(
        SIGNUP,
        {"email": "ada@lovelace.example", "password1": password1, "password2": password2},
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not User.objects.exists()


def test_sign_in_with_the_email_in_any_case_and_sign_out(client, alice):
    page = client.get(LOGIN)
    assert 'name="username"' in page.content.decode()
    assert 'name="password"' in page.content.decode()

    response = client.post(
        LOGIN, {"username": "Alice@ACME.example", "password": "pw-alice-123", "next": "/settings/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/settings/"
    assert client.get("/settings/").status_code == 200

    assert client.get("/accounts/logout/").status_code == 405  # sign-out is a POST
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/settings/")["Location"].startswith("/accounts/login/")


def test_a_wrong_password_is_refused_without_saying_which_part_is_wrong(client, alice):
    for username in ("alice@acme.example", "nobody@acme.example"):
        response = client.post(LOGIN, {"username": username, "password": "wrong"})
        assert response.status_code == 200
        assert "The e-mail address or the password is wrong." in response.content.decode()


def test_password_reset_by_email_link_and_it_verifies_the_address(
    client, alice, django_capture_on_commit_callbacks
):
    response = client.post("/accounts/password_reset/", {"email": "ALICE@acme.example"})
    assert response["Location"] == "/accounts/password_reset/done/"
    (message,) = mail.outbox
    link = _link(message)

    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": GOOD_PASSWORD, "new_password2": GOOD_PASSWORD},
    )
    assert done["Location"] == "/accounts/reset/done/"
    # django-axes checks every authenticate() against its counters and needs the request.
    assert Client().login(
        request=HttpRequest(), username="alice@acme.example", password=GOOD_PASSWORD
    )
    assert has_verified_email(User.objects.get(pk=alice.pk))


def test_password_reset_for_an_unknown_address_says_the_same_and_sends_nothing(client, db):
    response = client.post("/accounts/password_reset/", {"email": "nobody@nowhere.example"})
    assert response["Location"] == "/accounts/password_reset/done/"
    assert mail.outbox == []


def test_the_verification_link_verifies_the_address(client, django_capture_on_commit_callbacks):
    _signup(client, django_capture_on_commit_callbacks)
    link = _link(mail.outbox[0])

    response = Client().get(link)  # from another browser, e.g. the phone
    assert response.status_code == 200
    assert "is verified" in response.content.decode()
    assert has_verified_email(User.objects.get())
    assert Client().get(link).status_code == 200  # following it again changes nothing


def test_a_tampered_or_expired_verification_link_is_refused(
    client, settings, django_capture_on_commit_callbacks
):
    _signup(client, django_capture_on_commit_callbacks)
    link = _link(mail.outbox[0])

    assert client.get(link[:-3] + "xx/").status_code == 400
    settings.EMAIL_VERIFICATION_MAX_AGE = -1
    expired = client.get(link)
    assert expired.status_code == 400
    assert "expired" in expired.content.decode()
    assert not has_verified_email(User.objects.get())


def test_a_link_for_a_previous_address_does_not_verify_the_new_one(alice):
    token = signing.dumps(
        {"user": alice.pk, "email": "old@acme.example"}, salt="accounts.verify-email"
    )
    assert Client().get(f"/accounts/verify/{token}/").status_code == 400
    assert not has_verified_email(alice)


def test_the_link_can_be_sent_again_but_not_in_a_loop(
    web, alice, django_capture_on_commit_callbacks
):
    client = web(alice)
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post("/accounts/verify/", follow=True)
        second = client.post("/accounts/verify/", follow=True)

    assert "We sent a new link" in first.content.decode()
    assert "a moment ago" in second.content.decode()
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@acme.example"]


def test_a_signed_in_person_on_the_sign_up_page_goes_home(web, alice):
    assert web(alice).get(SIGNUP)["Location"] == "/"
