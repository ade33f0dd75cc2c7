from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction

from billing_tiers.errors import QuotaExceeded
from billing_tiers.models import QuotaCharge, QuotaUsage
from billing_tiers.selectors import quota_status, rate_limit_headers
from billing_tiers.services import (
    charge_quota,
    charge_quota_creating,
    check_quota,
    purge_quota_ledger,
    refund_quota,
    refund_quota_for,
)
from diagnosis.models import Diagnosis
from plumbing.problems import PROBLEM_CONTENT_TYPE, problem_exception_handler
from tests.billing_tiers.conftest import person, visitor

pytestmark = pytest.mark.django_db

URL = "/api/v1/quota"
HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
)


def _exhaust(actor) -> QuotaExceeded:
    for _ in range(100):
        try:
            charge_quota(actor=actor)
        except QuotaExceeded as exc:
            return exc
    raise AssertionError("never refused")


def test_the_quota_endpoint_answers_a_visitor_with_headers(api, clock):
    clock.set(datetime(2030, 5, 6, 18, 0, tzinfo=UTC))

    response = api.get(URL)

    assert response.status_code == 200
    assert response.json() == {
        "tier": "anonymous",
        "limit": 3,
        "used": 0,
        "remaining": 3,
        "reset": "2030-05-07T00:00:00Z",
    }
    assert response["RateLimit-Limit"] == response["X-RateLimit-Limit"] == "3"
    assert response["RateLimit-Remaining"] == response["X-RateLimit-Remaining"] == "3"
    assert response["RateLimit-Reset"] == str(6 * 3600)
    assert response["X-RateLimit-Reset"] == str(int(datetime(2030, 5, 7, tzinfo=UTC).timestamp()))


def test_reading_the_quota_never_charges(api, acme_api):
    for _ in range(5):
        api.get(URL)
        acme_api.get(URL)

    assert api.get(URL).json()["remaining"] == 3
    assert acme_api.get(URL).json()["remaining"] == 3
    assert not QuotaUsage.objects.exists()


def test_a_visitor_is_counted_by_address(api):
    charge_quota(actor=visitor("127.0.0.1"))
    charge_quota(actor=visitor("10.0.0.9"))

    assert api.get(URL).json()["remaining"] == 2
    assert api.get(URL, REMOTE_ADDR="10.0.0.9").json()["remaining"] == 2
    assert api.get(URL, REMOTE_ADDR="10.0.0.10").json()["remaining"] == 3


def test_members_and_tokens_share_the_organisations_allowance(
    alice, acme, alice_api, bob_api, acme_api, charlie_api
):
    charge_quota(actor=person(alice, acme))

    for client in (alice_api, bob_api, acme_api):
        response = client.get(URL)
        assert response.json()["remaining"] == 2
        assert response["RateLimit-Remaining"] == "2"
    assert charlie_api.get(URL).json()["remaining"] == 3


def test_a_token_without_any_particular_scope_reads_its_quota(read_only_api):
    # The quota is the caller's own, not tenant data: every token may read it.
    assert read_only_api.get(URL).status_code == 200


def test_a_bad_token_is_refused_not_treated_as_a_visitor(api):
    api.credentials(HTTP_AUTHORIZATION="Bearer rc_live_not-a-real-token")

    response = api.get(URL)

    assert response.status_code == 401
    assert response["Content-Type"] == PROBLEM_CONTENT_TYPE


@pytest.mark.urls("tests.billing_tiers.charge_urls")
def test_over_quota_is_a_429_problem_saying_when_and_how_it_rises(acme_api, clock):
    clock.set(datetime(2030, 5, 6, 22, 30, tzinfo=UTC))
    accepted = [acme_api.post("/charge") for _ in range(3)]
    assert [r.status_code for r in accepted] == [202, 202, 202]
    assert [r["RateLimit-Remaining"] for r in accepted] == ["2", "1", "0"]

    response = acme_api.post("/charge")

    assert response.status_code == 429
    assert response["Content-Type"] == PROBLEM_CONTENT_TYPE
    assert response["Retry-After"] == str(90 * 60)
    assert response["RateLimit-Remaining"] == response["X-RateLimit-Remaining"] == "0"
    assert response["RateLimit-Limit"] == response["X-RateLimit-Limit"] == "3"
    assert response["RateLimit-Reset"] == str(90 * 60)
    assert response["X-RateLimit-Reset"] == str(int(datetime(2030, 5, 7, tzinfo=UTC).timestamp()))
    body = response.json()
    assert body["status"] == 429
    assert body["error"] == "quota_exceeded"
    assert body["tier"] == "free"
    assert body["reset"] == "2030-05-07T00:00:00Z"
    assert body["retry_after"] == 5400
    assert body["upgrade"] == {
        "tier": "verified",
        "daily_diagnoses": 10,
        "how": "Verify your e-mail address",
    }
    assert "2030-05-07 00:00 UTC" in body["detail"]
    assert "Verify your e-mail address for 10 a day" in body["detail"]
    assert acme_api.get("/charge").status_code == 405  # and nothing else was charged
    assert QuotaUsage.objects.get().used == 3


@pytest.mark.urls("tests.billing_tiers.charge_urls")
def test_a_visitor_over_quota_is_told_to_sign_up(api):
    for _ in range(3):
        api.post("/charge")

    body = api.post("/charge").json()

    assert body["tier"] == "anonymous"
    assert body["upgrade"]["how"].startswith("Sign up")


@pytest.mark.urls("tests.billing_tiers.charge_urls")
def test_an_idempotency_key_retry_over_http_is_charged_once(acme_api):
    first = acme_api.post("/charge", HTTP_IDEMPOTENCY_KEY="job-1")
    again = acme_api.post("/charge", HTTP_IDEMPOTENCY_KEY="job-1")

    assert first.json() == again.json()
    assert again["RateLimit-Remaining"] == "2"


def test_the_problem_handler_copies_an_errors_headers():
    exc = QuotaExceeded("over", headers={"Retry-After": "5"})

    response = problem_exception_handler(exc, {})

    assert response is not None
    assert response["Retry-After"] == "5"


def test_at_the_top_tier_no_upgrade_is_offered(acme_workplace, alice, issue_code):
    from billing_tiers.services import redeem_evaluation_code

    actor = person(alice, acme_workplace)
    redeem_evaluation_code(actor=actor, code=issue_code(daily_limit=2))

    exc = _exhaust(actor)

    assert exc.extra["tier"] == "scale"
    assert exc.extra["limit"] == 2
    assert exc.extra["upgrade"] is None


def test_the_workplace_is_told_about_scale(acme_workplace, alice):
    exc = _exhaust(person(alice, acme_workplace))

    assert exc.extra["upgrade"]["tier"] == "scale"
    assert "/evaluation/" in exc.extra["upgrade"]["how"]


def test_the_utc_day_boundary_resets_the_quota(alice, acme, clock):
    actor = person(alice, acme)
    clock.set(datetime(2030, 5, 6, 23, 59, 59, tzinfo=UTC))
    _exhaust(actor)
    assert quota_status(actor).remaining == 0

    clock.set(datetime(2030, 5, 7, 0, 0, tzinfo=UTC))
    status = quota_status(actor)
    assert (status.used, status.remaining) == (0, 3)
    assert status.reset == datetime(2030, 5, 8, tzinfo=UTC)
    assert rate_limit_headers(status)["RateLimit-Reset"] == "86400"
    charge = charge_quota(actor=actor)
    assert charge.day.isoformat() == "2030-05-07"


def test_a_refund_restores_one_unit_exactly_once(alice, acme):
    actor = person(alice, acme)
    charges = [charge_quota(actor=actor) for _ in range(3)]

    assert refund_quota(charge=charges[0]) is True
    assert refund_quota(charge=charges[0]) is False
    assert quota_status(actor).remaining == 1
    assert refund_quota_for(reference="no-such-diagnosis") is False


def test_a_refund_by_reference(alice, acme):
    actor = person(alice, acme)
    charge_quota(actor=actor, reference="7d4a0e6c-0a51-4c52-a3a8-2f3d3d3d0001")

    assert refund_quota_for(reference="7d4a0e6c-0a51-4c52-a3a8-2f3d3d3d0001") is True
    assert refund_quota_for(reference="7d4a0e6c-0a51-4c52-a3a8-2f3d3d3d0001") is False
    assert quota_status(actor).used == 0


def test_a_refund_goes_back_to_the_day_it_was_charged(alice, acme, clock):
    actor = person(alice, acme)
    clock.set(datetime(2030, 5, 6, 23, 0, tzinfo=UTC))
    charge = charge_quota(actor=actor)
    clock.set(datetime(2030, 5, 7, 1, 0, tzinfo=UTC))
    charge_quota(actor=actor)

    assert refund_quota(charge=charge) is True
    assert quota_status(actor).used == 1  # today's unit stays charged
    assert QuotaUsage.objects.get(day="2030-05-06").used == 0


def test_a_rolled_back_transaction_takes_its_charge_with_it(alice, acme):
    actor = person(alice, acme)

    def create_diagnosis() -> None:
        with transaction.atomic():
            charge_quota(actor=actor, reference="d-1")
            raise RuntimeError("the diagnosis could not be created")

    with pytest.raises(RuntimeError):
        create_diagnosis()

    assert quota_status(actor).used == 0
    assert not QuotaCharge.objects.exists()


def test_a_refusal_caught_inside_a_transaction_leaves_nothing_behind(alice, acme, settings):
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 1}
    actor = person(alice, acme)

    with transaction.atomic():
        charge_quota(actor=actor)
        with pytest.raises(QuotaExceeded):
            charge_quota(actor=actor)

    assert quota_status(actor).used == 1
    assert QuotaCharge.objects.count() == 1


def _diagnosis(actor) -> Diagnosis:
    return Diagnosis(organization=actor.organization, source="api", size_bytes=10)


def test_a_charge_creating_a_row_takes_the_unit_records_itself_and_saves_the_row(alice, acme):
    actor = person(alice, acme)
    charge_quota(actor=actor)
    diagnosis = _diagnosis(actor)

    charge = charge_quota_creating(diagnosis, actor=actor)

    assert charge.used_today == 2
    assert not diagnosis._state.adding
    saved = QuotaCharge.objects.get(reference=str(diagnosis.pk))
    assert (saved.pk, saved.subject, saved.tier, saved.idempotency_key) == (
        charge.pk,
        f"org:{acme.pk}",
        "free",
        "",
    )
    assert Diagnosis.objects.get(pk=diagnosis.pk).organization == acme
    assert quota_status(actor).used == 2
    assert refund_quota_for(reference=diagnosis.pk) is True
    assert quota_status(actor).used == 1


def test_a_refused_charge_creating_a_row_saves_neither(alice, acme, settings):
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 1}
    actor = person(alice, acme)
    charge_quota_creating(_diagnosis(actor), actor=actor)
    refused = _diagnosis(actor)

    # Inside the test's transaction: a refusal writes nothing and leaves it usable.
    with pytest.raises(QuotaExceeded):
        charge_quota_creating(refused, actor=actor)

    assert refused._state.adding
    assert not Diagnosis.objects.filter(pk=refused.pk).exists()
    assert QuotaCharge.objects.count() == 1
    assert quota_status(actor).used == 1


@pytest.mark.django_db(transaction=True)
def test_a_row_that_cannot_be_saved_takes_no_unit_and_leaves_no_charge(alice, acme):
    # In autocommit, as a request runs it: the statement is its own transaction, all or nothing.
    actor = person(alice, acme)
    first = _diagnosis(actor)
    charge_quota_creating(first, actor=actor)
    again = _diagnosis(actor)
    again.pk = first.pk

    with pytest.raises(IntegrityError):
        charge_quota_creating(again, actor=actor)

    assert quota_status(actor).used == 1
    assert QuotaCharge.objects.count() == 1
    assert Diagnosis.objects.count() == 1


def test_the_same_idempotency_key_is_charged_once(alice, acme, charlie, umbrella):
    actor = person(alice, acme)

    first = charge_quota(actor=actor, idempotency_key="ci-job-17")
    again = charge_quota(actor=actor, idempotency_key="ci-job-17")
    other = charge_quota(actor=actor, idempotency_key="ci-job-18")
    elsewhere = charge_quota(actor=person(charlie, umbrella), idempotency_key="ci-job-17")

    assert again.pk == first.pk
    assert other.pk != first.pk
    assert elsewhere.pk != first.pk
    assert quota_status(actor).used == 2


def test_a_retry_after_the_limit_still_returns_its_charge(alice, acme, settings):
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 1}
    actor = person(alice, acme)

    first = charge_quota(actor=actor, idempotency_key="k")

    assert charge_quota(actor=actor, idempotency_key="k").pk == first.pk


def test_the_ledger_is_purged_after_its_retention(alice, acme, clock, settings):
    settings.QUOTA_LEDGER_DAYS = 35
    actor = person(alice, acme)
    now = datetime(2030, 5, 6, 12, 0, tzinfo=UTC)
    clock.set(now - timedelta(days=36))
    charge_quota(actor=actor)
    clock.set(now - timedelta(days=35))
    charge_quota(actor=actor)
    clock.set(now)

    assert purge_quota_ledger() == 2  # the usage row and the charge of day -36
    assert QuotaUsage.objects.count() == 1
    assert QuotaCharge.objects.count() == 1


def test_checking_the_quota_charges_nothing_and_refuses_when_it_is_used(db):
    actor = visitor("198.51.100.7")
    for _ in range(3):
        assert check_quota(actor=actor).remaining > 0
        charge_quota(actor=actor)

    with pytest.raises(QuotaExceeded) as refused:
        check_quota(actor=actor)

    assert refused.value.headers["RateLimit-Remaining"] == "0"
    assert int(refused.value.headers["Retry-After"]) > 0
    assert quota_status(actor).used == 3
