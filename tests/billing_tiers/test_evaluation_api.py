from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts.services import add_member
from billing_tiers.models import Evaluation, EvaluationRequest
from billing_tiers.services import (
    approve_evaluation_request,
    decline_evaluation_request,
    redeem_evaluation_code,
)
from plumbing.problems import PROBLEM_CONTENT_TYPE
from tests.billing_tiers.conftest import logged_in, person

pytestmark = pytest.mark.django_db

REQUESTS = "/api/v1/evaluation/requests"
REDEEM = "/api/v1/evaluation/redeem"
ASK = {"training": "7B LLM pretraining on 64 H100s, Megatron-LM", "team_size": 6}


def _problem(response, status: int, error: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM_CONTENT_TYPE
    body = response.json()
    if error is not None:
        assert body["error"] == error
    return body


# --- Requests --------------------------------------------------------------------------------


def test_an_owner_of_a_verified_workplace_requests_and_follows_the_status(
    acme_workplace, alice_api
):
    created = alice_api.post(REQUESTS, ASK, format="json")

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["status"] == "open"
    assert body["training"] == ASK["training"]
    assert body["team_size"] == 6
    assert alice_api.get(f"{REQUESTS}/{body['id']}").json()["status"] == "open"

    decline_evaluation_request(
        request_id=body["id"], decided_by=None, reason="We are full this month."
    )
    declined = alice_api.get(f"{REQUESTS}/{body['id']}").json()
    assert declined["status"] == "declined"
    assert declined["decline_reason"] == "We are full this month."
    assert [r["id"] for r in alice_api.get(REQUESTS).json()["results"]] == [body["id"]]


def test_the_requests_are_paged_newest_first(acme_workplace, alice_api):
    made = []
    for _ in range(3):
        made.append(alice_api.post(REQUESTS, ASK, format="json").json()["id"])
        decline_evaluation_request(request_id=made[-1], decided_by=None, reason="Not now.")
    first = alice_api.get(REQUESTS, {"limit": "2"}).json()
    assert first["count"] == 3
    assert [r["id"] for r in first["results"]] == made[:0:-1]
    rest = alice_api.get(first["next"]).json()
    assert [r["id"] for r in rest["results"]] == made[:1]
    assert rest["next"] is None


def test_a_request_is_read_by_staff_without_hidden_characters(acme_workplace, alice_api):
    asked = {"training": "7B LLM\u202e on 64 GPUs\r\nMegatron\x1b", "team_size": 3}
    created = alice_api.post(REQUESTS, asked, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["training"] == "7B LLM on 64 GPUs\nMegatron"


def test_an_admin_may_request_too(acme_workplace, django_user_model):
    dana = django_user_model.objects.create_user("dana", "dana@acme.example", "pw-dana-123")
    add_member(organization=acme_workplace, user=dana, role="admin")

    assert logged_in(dana).post(REQUESTS, ASK, format="json").status_code == 201


def test_one_open_request_per_organisation(acme_workplace, alice_api):
    first = alice_api.post(REQUESTS, ASK, format="json").json()

    _problem(alice_api.post(REQUESTS, ASK, format="json"), 409, "request_open")

    decline_evaluation_request(request_id=first["id"], decided_by=None, reason="Not now.")
    assert alice_api.post(REQUESTS, ASK, format="json").status_code == 201


def test_requests_are_for_verified_workplaces(acme, alice_api):
    _problem(alice_api.post(REQUESTS, ASK, format="json"), 403, "not_verified_workplace")


def test_a_request_needs_what_they_train_and_a_team_size(acme_workplace, alice_api):
    body = _problem(alice_api.post(REQUESTS, {"team_size": 0}, format="json"), 400)

    assert set(body["errors"]) == {"training", "team_size"}


def test_a_member_without_a_role_may_not_request_or_list(acme_workplace, bob_api):
    _problem(bob_api.post(REQUESTS, ASK, format="json"), 403)
    _problem(bob_api.get(REQUESTS), 403)


def test_a_token_may_not_manage_evaluations(acme_workplace, acme_api, read_only_api):
    for client in (acme_api, read_only_api):
        _problem(client.post(REQUESTS, ASK, format="json"), 403)
        _problem(client.get(REQUESTS), 403)
        _problem(client.post(REDEEM, {"code": "SCALE-0000-0000-0000"}, format="json"), 403)


def test_a_visitor_must_sign_in(api):
    assert api.get(REQUESTS).status_code == 401
    assert api.post(REDEEM, {"code": "x"}, format="json").status_code == 401


def test_another_organisations_request_is_404(
    acme_workplace, umbrella_workplace, alice_api, charlie_api
):
    theirs = charlie_api.post(REQUESTS, ASK, format="json").json()

    _problem(alice_api.get(f"{REQUESTS}/{theirs['id']}"), 404)
    _problem(alice_api.get(f"{REQUESTS}/00000000-0000-0000-0000-000000000000"), 404)
    assert alice_api.get(REQUESTS).json()["results"] == []


def test_the_requests_list_does_not_grow_its_queries_with_rows(
    acme_workplace, alice_api, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    alice_api.post(REQUESTS, ASK, format="json")
    with CaptureQueriesContext(connection) as one:
        assert len(alice_api.get(REQUESTS).json()["results"]) == 1
    baseline = len(one)
    for _ in range(4):
        open_request = EvaluationRequest.objects.get(status="open")
        decline_evaluation_request(request_id=open_request.id, decided_by=None, reason="No.")
        alice_api.post(REQUESTS, ASK, format="json")

    with django_assert_max_num_queries(baseline):
        assert len(alice_api.get(REQUESTS).json()["results"]) == 5


def test_approval_emails_a_code_that_redeems(acme_workplace, alice, alice_api):
    created = alice_api.post(REQUESTS, ASK, format="json").json()

    approve_evaluation_request(request_id=created["id"], decided_by=None)

    assert alice_api.get(f"{REQUESTS}/{created['id']}").json()["status"] == "approved"
    (message,) = mail.outbox
    assert message.to == ["alice@acme.example"]
    code = next(line.strip() for line in message.body.splitlines() if "SCALE-" in line)
    assert alice_api.post(REDEEM, {"code": code}, format="json").status_code == 201


def test_an_evaluation_cannot_be_requested_while_one_runs(
    acme_workplace, alice, alice_api, issue_code
):
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code())

    _problem(alice_api.post(REQUESTS, ASK, format="json"), 409, "evaluation_active")


# --- Redeeming -------------------------------------------------------------------------------


def test_redeeming_puts_the_organisation_on_scale(acme_workplace, alice_api, issue_code):
    code = issue_code(days=14, daily_limit=50)

    response = alice_api.post(REDEEM, {"code": code}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tier"] == "scale"
    assert body["daily_limit"] == 50
    evaluation = Evaluation.objects.get()
    assert evaluation.organization == acme_workplace
    assert evaluation.ends_at - evaluation.starts_at == timedelta(days=14)
    quota = alice_api.get("/api/v1/quota").json()
    assert (quota["tier"], quota["limit"]) == ("scale", 50)


def test_codes_are_forgiving_about_case_spaces_and_lookalikes(
    acme_workplace, alice_api, issue_code
):
    code = issue_code()
    typed = " " + code.lower().replace("-", " ").replace("0", "o").replace("1", "l") + " "

    assert alice_api.post(REDEEM, {"code": typed}, format="json").status_code == 201


def test_a_wrong_code(acme_workplace, alice_api, issue_code):
    from billing_tiers.codes import check_symbol

    issue_code()
    payload = "ABCDEFGHJKM"
    body = payload + check_symbol(payload)
    unknown = f"SCALE-{body[:4]}-{body[4:8]}-{body[8:]}"

    detail = _problem(alice_api.post(REDEEM, {"code": unknown}, format="json"), 400, "code_invalid")
    assert "No evaluation code matches" in detail["detail"]
    malformed = _problem(alice_api.post(REDEEM, {"code": "SCALE-1234"}, format="json"), 400)
    assert "looks like SCALE-XXXX-XXXX-XXXX" in malformed["detail"]


def test_a_mistyped_code_is_told_apart(acme_workplace, alice_api, issue_code):
    code = issue_code()
    wrong = code[:-1] + ("A" if code[-1] != "A" else "B")

    body = _problem(alice_api.post(REDEEM, {"code": wrong}, format="json"), 400, "code_invalid")

    assert "typo" in body["detail"]


def test_a_used_code(acme_workplace, umbrella_workplace, alice_api, charlie_api, issue_code):
    code = issue_code()
    alice_api.post(REDEEM, {"code": code}, format="json")

    _problem(charlie_api.post(REDEEM, {"code": code}, format="json"), 409, "code_used")


def test_an_expired_code(acme_workplace, alice_api, issue_code, clock):
    now = timezone.now()
    code = issue_code(redeem_by=now.date())
    clock.set(now + timedelta(days=1))

    body = _problem(alice_api.post(REDEEM, {"code": code}, format="json"), 410, "code_expired")

    assert now.date().isoformat() in body["detail"]


def test_a_code_is_redeemable_through_its_last_day(acme_workplace, alice_api, issue_code, clock):
    now = timezone.now()
    code = issue_code(redeem_by=now.date())
    clock.set(now.replace(hour=23, minute=59, second=59))

    assert alice_api.post(REDEEM, {"code": code}, format="json").status_code == 201


def test_not_a_verified_workplace(acme, alice_api, issue_code):
    code = issue_code()

    body = _problem(alice_api.post(REDEEM, {"code": code}, format="json"), 403)

    assert body["error"] == "not_verified_workplace"
    assert Evaluation.objects.count() == 0


def test_a_member_without_a_role_may_not_redeem(acme_workplace, bob_api, issue_code):
    _problem(bob_api.post(REDEEM, {"code": issue_code()}, format="json"), 403)


def test_a_second_code_while_an_evaluation_runs(acme_workplace, alice_api, issue_code):
    alice_api.post(REDEEM, {"code": issue_code()}, format="json")
    second = issue_code()

    _problem(alice_api.post(REDEEM, {"code": second}, format="json"), 409, "evaluation_active")
    # The second code is still unused: another organisation, or this one later, may redeem it.
    assert Evaluation.objects.count() == 1


def test_a_new_code_after_the_evaluation_ended(acme_workplace, acme_api, alice, issue_code, clock):
    start = timezone.now()
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code(days=1))
    clock.set(start + timedelta(days=2))

    redeem_evaluation_code(
        actor=person(alice, acme_workplace),
        code=issue_code(redeem_by=(start + timedelta(days=30)).date()),
    )

    assert acme_api.get("/api/v1/quota").json()["tier"] == "scale"


# --- Throttling ------------------------------------------------------------------------------


def test_redemption_attempts_are_throttled_per_person(acme_workplace, alice_api, settings):
    settings.EVALUATION_REDEEM_PER_HOUR_USER = 3
    for _ in range(3):
        _problem(alice_api.post(REDEEM, {"code": "SCALE-0000-0000-0000"}, format="json"), 400)

    response = alice_api.post(REDEEM, {"code": "SCALE-0000-0000-0000"}, format="json")

    _problem(response, 429)
    assert 0 < int(response["Retry-After"]) <= 3600


def test_redemption_attempts_are_throttled_per_address(
    acme_workplace, umbrella_workplace, alice_api, charlie_api, settings
):
    settings.EVALUATION_REDEEM_PER_HOUR_ADDRESS = 4
    for client in (alice_api, charlie_api, alice_api, charlie_api):
        _problem(client.post(REDEEM, {"code": "SCALE-0000-0000-0000"}, format="json"), 400)

    _problem(charlie_api.post(REDEEM, {"code": "x"}, format="json", REMOTE_ADDR="127.0.0.1"), 429)
    other_address = charlie_api.post(REDEEM, {"code": "x"}, format="json", REMOTE_ADDR="10.1.2.3")
    _problem(other_address, 400)


def test_throttle_counters_name_no_address_and_live_under_the_runs_prefix(
    acme_workplace, alice_api, settings
):
    import redis

    alice_api.post(REDEEM, {"code": "x"}, format="json", REMOTE_ADDR="10.9.8.7")

    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = [k.decode() for k in client.scan_iter(match=f"{settings.REDIS_KEY_PREFIX}*throttle*")]
    assert len(keys) >= 2
    assert not any("10.9.8.7" in key for key in keys)


def test_staff_are_emailed_when_a_request_arrives(
    acme_workplace, alice_api, django_user_model, settings, django_capture_on_commit_callbacks
):
    settings.SITE_URL = "https://rootcause.example.com"
    settings.STAFF_NOTIFICATION_EMAILS = ["sales@rootcause.example.com"]
    django_user_model.objects.create_user("ops", "ops@rootcause.example.com", "pw", is_staff=True)
    django_user_model.objects.create_user(
        "gone", "gone@rootcause.example.com", "pw", is_staff=True, is_active=False
    )
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        answer = alice_api.post(REQUESTS, ASK, format="json")

    assert answer.status_code == 201, answer.content
    (message,) = mail.outbox
    assert sorted(message.to) == ["ops@rootcause.example.com", "sales@rootcause.example.com"]
    assert "Acme" in message.subject
    request = EvaluationRequest.objects.get()
    assert "7B LLM pretraining on 64 H100s" in message.body
    assert (
        f"https://rootcause.example.com/admin/billing_tiers/evaluationrequest/{request.pk}/change/"
        in message.body
    )


def test_a_mail_outage_does_not_lose_the_request(
    acme_workplace, alice_api, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.STAFF_NOTIFICATION_EMAILS = ["sales@rootcause.example.com"]

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("no mail server")

    monkeypatch.setattr("billing_tiers.emails.send_mail", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        answer = alice_api.post(REQUESTS, ASK, format="json")

    assert answer.status_code == 201
    assert EvaluationRequest.objects.filter(status="open").exists()
