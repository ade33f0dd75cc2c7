"""Diagnoses and the daily quota, through the API: headers on every answer, one unit per accepted
diagnosis, none for a retry, a refund when the pipeline fails on our side, 429 past the allowance
before anything is staged."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.conf import settings

from accounts.actors import Actor
from billing_tiers.models import QuotaCharge
from billing_tiers.selectors import quota_status
from diagnosis import services
from diagnosis.models import Diagnosis
from diagnosis.staging import RAW, staging_key
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
)


def _post(client, body: bytes = OOM_LOG.encode(), **headers):
    return client.post(URL, data=body, content_type="text/plain", **headers)


def _used(organization) -> int:
    return quota_status(Actor(organization=organization)).used


def _staged_raw_logs() -> list[bytes]:
    return list(redis.Redis.from_url(settings.REDIS_URL).scan_iter(staging_key(RAW, "*")))


def test_every_answer_of_the_diagnosis_api_carries_the_quota(acme_api):
    posted = _post(acme_api)
    answers = {
        "post": posted,
        "detail": acme_api.get(posted["Location"]),
        "list": acme_api.get(URL),
        "not found": acme_api.get(f"{URL}/{uuid.uuid4()}"),
        "refused": _post(acme_api, b""),
    }

    for name, response in answers.items():
        for header in HEADERS:
            assert header in response, (name, header)
        assert response["RateLimit-Limit"] == "3", name
        assert response["RateLimit-Remaining"] == response["X-RateLimit-Remaining"] == "2", name


def test_an_idempotency_key_retry_is_charged_once(acme_api, acme):
    first = _post(acme_api, HTTP_IDEMPOTENCY_KEY="ci-job-42")
    second = _post(acme_api, HTTP_IDEMPOTENCY_KEY="ci-job-42")

    assert (first.status_code, second.status_code) == (202, 200)
    assert first.json()["id"] == second.json()["id"]
    assert QuotaCharge.objects.count() == 1
    assert QuotaCharge.objects.get().reference == first.json()["id"]
    assert second["RateLimit-Remaining"] == "2"
    assert _used(acme) == 1


def test_a_key_whose_diagnosis_was_deleted_makes_a_new_one_and_is_charged(acme_api, acme):
    first = _post(acme_api, HTTP_IDEMPOTENCY_KEY="ci-job-7").json()["id"]
    Diagnosis.objects.filter(id=first).delete()

    second = _post(acme_api, HTTP_IDEMPOTENCY_KEY="ci-job-7")

    assert second.status_code == 202
    assert second.json()["id"] != first
    assert _used(acme) == 2


def test_a_failed_pipeline_refunds_its_unit(
    acme_api, acme, monkeypatch, django_capture_on_commit_callbacks
):
    from diagnosis.pipeline import runners

    def broken_engine():
        raise RuntimeError("the catalogue could not be compiled")

    monkeypatch.setattr(runners, "current_engine", broken_engine)

    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api)

    diagnosis = Diagnosis.objects.get(id=response.json()["id"])
    assert diagnosis.status == Diagnosis.Status.FAILED
    assert "internal error in matching" in diagnosis.failure_reason
    assert QuotaCharge.objects.get(reference=str(diagnosis.id)).refunded_at is not None
    assert _used(acme) == 0
    assert acme_api.get(response["Location"])["RateLimit-Remaining"] == "3"


def test_a_diagnosis_failed_twice_is_refunded_once(acme_api, acme):
    diagnosis_id = _post(acme_api).json()["id"]
    _post(acme_api)

    assert services.fail_diagnosis(diagnosis_id=diagnosis_id, reason="boom") is True
    assert services.fail_diagnosis(diagnosis_id=diagnosis_id, reason="again") is False

    assert _used(acme) == 1


def test_past_the_allowance_the_answer_is_429_and_nothing_is_staged(acme_api, acme):
    for _ in range(3):
        assert _post(acme_api).status_code == 202
    staged = _staged_raw_logs()  # the pipelines did not run: their raw logs wait in Redis

    response = _post(acme_api, HTTP_IDEMPOTENCY_KEY="one-more")

    assert response.status_code == 429
    assert response["Content-Type"] == "application/problem+json"
    assert int(response["Retry-After"]) > 0
    assert response["RateLimit-Remaining"] == response["X-RateLimit-Remaining"] == "0"
    body = response.json()
    assert body["status"] == 429
    assert body["tier"] == "free"
    assert body["remaining"] == 0
    assert body["upgrade"]["tier"] == "verified"
    assert "resets at" in body["detail"]
    assert Diagnosis.objects.count() == 3
    assert QuotaCharge.objects.count() == 3
    assert sorted(_staged_raw_logs()) == sorted(staged)


def test_members_and_tokens_share_the_organisations_allowance(acme_api, acme, bob, api):
    _post(acme_api)
    api.force_authenticate(bob)

    response = _post(api)

    assert response["RateLimit-Remaining"] == "1"
    assert Diagnosis.objects.get(id=response.json()["id"]).created_by == bob
