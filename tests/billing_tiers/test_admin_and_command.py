from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from billing_tiers.models import EvaluationCode, EvaluationRequest
from billing_tiers.services import redeem_evaluation_code, request_evaluation
from tests.billing_tiers.conftest import person

pytestmark = pytest.mark.django_db

CODE = re.compile(r"SCALE-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}")
CODES_ADMIN = "/admin/billing_tiers/evaluationcode/"
REQUESTS_ADMIN = "/admin/billing_tiers/evaluationrequest/"


@pytest.fixture
def staff_client(db) -> Client:
    staff = get_user_model().objects.create_superuser("staff", "staff@rootcause.example", "pw")
    client = Client()
    client.force_login(staff)
    return client


def _open_request(organization, manager) -> EvaluationRequest:
    return request_evaluation(
        actor=person(manager, organization), training="diffusion models", team_size=3
    )


# --- The command -----------------------------------------------------------------------------


def test_the_command_prints_the_codes_one_per_line():
    out, err = io.StringIO(), io.StringIO()

    call_command(
        "issue_evaluation_codes",
        "--count=3",
        "--days=7",
        "--daily=25",
        "--redeem-by=2099-12-31",
        stdout=out,
        stderr=err,
    )

    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert all(CODE.fullmatch(line) for line in lines)
    assert "3 codes: 7 days, 25 a day, redeem by 2099-12-31" in err.getvalue()
    rows = EvaluationCode.objects.all()
    assert {(r.days, r.daily_limit, r.redeem_by.isoformat()) for r in rows} == {
        (7, 25, "2099-12-31")
    }


def test_the_command_defaults(settings):
    out = io.StringIO()

    call_command("issue_evaluation_codes", "--count=1", stdout=out, stderr=io.StringIO())

    row = EvaluationCode.objects.get()
    assert (row.days, row.daily_limit) == (14, 50)
    assert row.redeem_by == timezone.now().date() + timedelta(days=30)


def test_a_code_from_the_command_redeems(acme_workplace, alice):
    out = io.StringIO()
    call_command(
        "issue_evaluation_codes", "--count=1", "--days=3", stdout=out, stderr=io.StringIO()
    )

    evaluation = redeem_evaluation_code(actor=person(alice, acme_workplace), code=out.getvalue())

    assert evaluation.ends_at - evaluation.starts_at == timedelta(days=3)


@pytest.mark.parametrize(
    "args",
    [
        ["--count=0"],
        ["--count=1001"],
        ["--count=1", "--days=0"],
        ["--count=1", "--daily=0"],
        ["--count=1", "--redeem-by=2001-01-01"],
        ["--count=1", "--redeem-by=tomorrow"],
    ],
)
def test_the_command_refuses_bad_arguments(args):
    with pytest.raises(CommandError):
        call_command("issue_evaluation_codes", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not EvaluationCode.objects.exists()


# --- The admin -------------------------------------------------------------------------------


def test_staff_issue_codes_from_the_admin_and_see_them_once(staff_client):
    assert b"Issue codes" in staff_client.get(CODES_ADMIN).content

    response = staff_client.post(
        f"{CODES_ADMIN}issue/",
        {"count": 2, "days": 14, "daily_limit": 50, "redeem_by": "2099-01-31", "note": "ACME"},
    )

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    codes = CODE.findall(response.content.decode())
    assert len(set(codes)) == 2
    assert EvaluationCode.objects.filter(note="ACME").count() == 2
    listing = staff_client.get(CODES_ADMIN).content.decode()
    assert not any(code in listing for code in codes)


def test_codes_cannot_be_added_by_a_plain_form(staff_client):
    assert staff_client.get(f"{CODES_ADMIN}add/").status_code == 403


def test_a_non_staff_person_cannot_issue(alice):
    client = Client()
    client.force_login(alice)

    response = client.post(f"{CODES_ADMIN}issue/", {"count": 1})

    assert response.status_code == 302  # to the admin login
    assert not EvaluationCode.objects.exists()


def test_staff_approve_a_request_and_the_code_is_emailed(staff_client, acme_workplace, alice):
    request = _open_request(acme_workplace, alice)

    response = staff_client.post(
        REQUESTS_ADMIN, {"action": "approve_requests", "_selected_action": [str(request.id)]}
    )

    assert response.status_code == 302
    request.refresh_from_db()
    assert request.status == "approved"
    assert request.code is not None
    (message,) = mail.outbox
    assert message.to == ["alice@acme.example"]
    (code,) = CODE.findall(str(message.body))
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=code)


def test_approving_twice_issues_one_code(staff_client, acme_workplace, alice):
    request = _open_request(acme_workplace, alice)
    for _ in range(2):
        staff_client.post(
            REQUESTS_ADMIN, {"action": "approve_requests", "_selected_action": [str(request.id)]}
        )

    assert EvaluationCode.objects.count() == 1
    assert len(mail.outbox) == 1


def test_a_failed_email_leaves_the_request_open(staff_client, acme_workplace, alice, monkeypatch):
    from billing_tiers import emails

    request = _open_request(acme_workplace, alice)

    def broken(**kwargs):
        raise ConnectionRefusedError("smtp down")

    monkeypatch.setattr(emails, "send_evaluation_code", broken)
    with pytest.raises(ConnectionRefusedError):
        staff_client.post(
            REQUESTS_ADMIN, {"action": "approve_requests", "_selected_action": [str(request.id)]}
        )

    request.refresh_from_db()
    assert request.status == "open"
    assert not EvaluationCode.objects.exists()


def test_staff_decline_with_a_reason(staff_client, acme_workplace, alice):
    request = _open_request(acme_workplace, alice)
    selection = {"action": "decline_requests", "_selected_action": [str(request.id)]}

    form = staff_client.post(REQUESTS_ADMIN, selection)
    assert form.status_code == 200
    assert b"reason" in form.content

    done = staff_client.post(
        REQUESTS_ADMIN, {**selection, "apply": "1", "reason": "Academic use only for now."}
    )

    assert done.status_code == 302
    request.refresh_from_db()
    assert (request.status, request.decline_reason) == ("declined", "Academic use only for now.")
    (message,) = mail.outbox
    assert "Academic use only for now." in message.body


def test_a_decline_needs_a_reason(staff_client, acme_workplace, alice):
    request = _open_request(acme_workplace, alice)

    staff_client.post(
        REQUESTS_ADMIN,
        {
            "action": "decline_requests",
            "_selected_action": [str(request.id)],
            "apply": "1",
            "reason": "",
        },
    )

    request.refresh_from_db()
    assert request.status == "open"


def test_the_admin_pages_render(staff_client, acme_workplace, alice, issue_code):
    _open_request(acme_workplace, alice)
    redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code())

    for model in ("evaluationcode", "evaluationrequest", "evaluation", "quotausage", "quotacharge"):
        assert staff_client.get(f"/admin/billing_tiers/{model}/").status_code == 200
    assert staff_client.get(f"{CODES_ADMIN}issue/").status_code == 200
