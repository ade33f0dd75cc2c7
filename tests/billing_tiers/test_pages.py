from __future__ import annotations

import pytest
from django.test import Client

from billing_tiers.models import Evaluation, EvaluationRequest

pytestmark = pytest.mark.django_db

PAGE = "/evaluation/"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_visitor_is_sent_to_sign_in(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert "login" in response["Location"]


def test_a_manager_of_a_verified_workplace_sees_both_forms(acme_workplace, alice):
    page = _client(alice).get(PAGE)

    assert page.status_code == 200
    html = page.content.decode()
    assert "workplace" in html
    assert "Redeem a code" in html
    assert "Request a code" in html
    assert "acme.example" in html


def test_a_manager_without_a_verified_domain_is_told_what_to_do(acme, alice):
    html = _client(alice).get(PAGE).content.decode()

    assert "verify your organisation" in html.lower()
    assert "Redeem a code" not in html


def test_a_member_sees_the_tier_but_no_forms(acme_workplace, bob):
    html = _client(bob).get(PAGE).content.decode()

    assert "Only owners and admins" in html
    assert "Redeem a code" not in html


def test_requesting_from_the_page(acme_workplace, alice):
    client = _client(alice)

    response = client.post(
        f"{PAGE}request/", {"training": "speech recognition, 8 GPUs", "team_size": "3"}
    )

    assert response.status_code == 302
    assert EvaluationRequest.objects.get().status == "open"
    html = client.get(PAGE).content.decode()
    assert "Waiting for staff" in html
    assert "Request a code" not in html


def test_an_invalid_request_shows_the_form_again(acme_workplace, alice):
    response = _client(alice).post(f"{PAGE}request/", {"training": "", "team_size": "0"})

    assert response.status_code == 400
    assert not EvaluationRequest.objects.exists()


def test_a_member_cannot_request_from_the_page(acme_workplace, bob):
    response = _client(bob).post(f"{PAGE}request/", {"training": "x", "team_size": "1"})

    assert response.status_code == 403
    assert not EvaluationRequest.objects.exists()


def test_redeeming_from_the_page_shows_the_end(acme_workplace, alice, issue_code):
    client = _client(alice)

    response = client.post(f"{PAGE}redeem/", {"code": issue_code()}, follow=True)

    assert response.status_code == 200
    evaluation = Evaluation.objects.get()
    html = response.content.decode()
    assert "Welcome to Scale" in html
    assert 'id="current-evaluation"' in html
    assert "scale" in html
    assert evaluation.ends_at.strftime("%Y") in html


def test_a_wrong_code_on_the_page_says_so_without_echoing_it(acme_workplace, alice, issue_code):
    issue_code()

    response = _client(alice).post(f"{PAGE}redeem/", {"code": "SCALE-ZZZZ-ZZZZ-ZZZ9"})

    assert response.status_code == 400
    html = response.content.decode()
    assert "typo" in html or "No evaluation code" in html
    assert "ZZZZ-ZZZZ" not in html


def test_the_page_is_throttled_like_the_api(acme_workplace, alice, settings):
    settings.EVALUATION_REDEEM_PER_HOUR_USER = 2
    client = _client(alice)
    for _ in range(2):
        assert client.post(f"{PAGE}redeem/", {"code": "SCALE-0000"}).status_code == 400

    response = client.post(f"{PAGE}redeem/", {"code": "SCALE-0000"})

    assert response.status_code == 429
    assert "Too many attempts" in response.content.decode()
    assert int(response["Retry-After"]) > 0


def test_the_page_needs_post_for_changes(acme_workplace, alice):
    assert _client(alice).get(f"{PAGE}redeem/").status_code == 405
