"""Races over real PostgreSQL: each thread has its own connection, started together."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from billing_tiers.errors import CodeUsed, QuotaExceeded, RequestAlreadyOpen
from billing_tiers.models import Evaluation, EvaluationCode, QuotaCharge, QuotaUsage
from billing_tiers.selectors import quota_status
from billing_tiers.services import (
    charge_quota,
    charge_quota_creating,
    redeem_evaluation_code,
    refund_quota,
    request_evaluation,
)
from diagnosis.models import Diagnosis
from tests.billing_tiers.conftest import person

pytestmark = pytest.mark.django_db(transaction=True)


def race(n: int, work: Callable[[int], Any]) -> list[Any]:
    """Runs `work(i)` in n threads released at once; each returns a result or its exception."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert connection.vendor == "postgresql"
    return results


def kinds(results: list[Any]) -> Counter[str]:
    return Counter(type(r).__name__ for r in results)


def test_fifty_concurrent_charges_against_a_remaining_ten_admit_exactly_ten(alice, acme, settings):
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 14}
    actor = person(alice, acme)
    for _ in range(4):
        charge_quota(actor=actor)
    assert quota_status(actor).remaining == 10

    results = race(50, lambda i: charge_quota(actor=actor, reference=f"diagnosis-{i}"))

    assert kinds(results) == {"QuotaCharge": 10, "QuotaExceeded": 40}
    assert all(isinstance(r, QuotaCharge | QuotaExceeded) for r in results)
    assert QuotaUsage.objects.get().used == 14
    assert QuotaCharge.objects.count() == 14
    assert quota_status(actor).remaining == 0


def test_fifty_concurrent_charges_creating_rows_against_a_remaining_ten_save_exactly_ten(
    alice, acme, settings
):
    # The one-statement path of every submission without an Idempotency-Key.
    settings.TIER_DAILY_DIAGNOSES = {**settings.TIER_DAILY_DIAGNOSES, "free": 14}
    actor = person(alice, acme)
    for _ in range(4):
        charge_quota(actor=actor)

    results = race(
        50,
        lambda i: charge_quota_creating(
            Diagnosis(organization=acme, source="api", size_bytes=i), actor=actor
        ),
    )

    assert kinds(results) == {"QuotaCharge": 10, "QuotaExceeded": 40}
    # Each admitted charge saw its own count: the units were taken one after the other.
    assert {r.used_today for r in results if isinstance(r, QuotaCharge)} == set(range(5, 15))
    assert QuotaUsage.objects.get().used == 14
    assert QuotaCharge.objects.count() == 14
    saved = set(Diagnosis.objects.values_list("pk", flat=True))
    assert len(saved) == 10
    assert {uuid.UUID(c.reference) for c in QuotaCharge.objects.exclude(reference="")} == saved


def test_concurrent_retries_with_one_idempotency_key_are_charged_once(alice, acme):
    actor = person(alice, acme)

    results = race(10, lambda i: charge_quota(actor=actor, idempotency_key="ci-job-42"))

    assert kinds(results) == {"QuotaCharge": 10}
    assert len({r.pk for r in results}) == 1
    assert quota_status(actor).used == 1


def test_concurrent_refunds_of_one_charge_restore_one_unit(alice, acme):
    actor = person(alice, acme)
    charges = [charge_quota(actor=actor) for _ in range(3)]

    results = race(10, lambda i: refund_quota(charge=charges[0]))

    assert results.count(True) == 1
    assert results.count(False) == 9
    assert quota_status(actor).used == 2


def test_twenty_concurrent_redemptions_of_one_code_succeed_once(
    acme_workplace, umbrella_workplace, alice, charlie, issue_code
):
    code = issue_code()
    actors = [person(alice, acme_workplace), person(charlie, umbrella_workplace)]

    results = race(20, lambda i: redeem_evaluation_code(actor=actors[i % 2], code=code))

    assert kinds(results) == {"Evaluation": 1, "CodeUsed": 19}
    assert all(isinstance(r, Evaluation | CodeUsed) for r in results)
    assert Evaluation.objects.count() == 1
    assert EvaluationCode.objects.get().redeemed_at is not None


def test_concurrent_requests_of_one_organisation_open_one(acme_workplace, alice):
    actor = person(alice, acme_workplace)

    results = race(
        10, lambda i: request_evaluation(actor=actor, training="LLM pretraining", team_size=4)
    )

    assert kinds(results) == {"EvaluationRequest": 1, "RequestAlreadyOpen": 9}
    assert all(not isinstance(r, Exception) or isinstance(r, RequestAlreadyOpen) for r in results)
