from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts.services import add_member
from billing_tiers import emails, tasks
from billing_tiers.models import Evaluation
from billing_tiers.services import redeem_evaluation_code
from config.celery import app
from tests.billing_tiers.conftest import person

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation(acme_workplace, alice, issue_code, django_user_model) -> Evaluation:
    dana = django_user_model.objects.create_user("dana", "dana@acme.example", "pw-dana-123")
    add_member(organization=acme_workplace, user=dana, role="admin")
    return redeem_evaluation_code(actor=person(alice, acme_workplace), code=issue_code(days=14))


def test_the_managers_are_emailed_three_days_before_the_end_once(evaluation, clock):
    clock.set(evaluation.ends_at - timedelta(days=3, minutes=1))
    assert tasks.send_evaluation_ending_notices() == 0

    clock.set(evaluation.ends_at - timedelta(days=3))
    assert tasks.send_evaluation_ending_notices() == 1
    assert tasks.send_evaluation_ending_notices() == 0

    (message,) = mail.outbox
    assert sorted(message.to) == ["alice@acme.example", "dana@acme.example"]  # not bob
    assert "ends on" in message.subject
    assert "returns to the workplace tier by itself" in " ".join(message.body.split())
    evaluation.refresh_from_db()
    assert evaluation.ending_notice_sent_at is not None


def test_no_notice_for_an_evaluation_that_has_ended(evaluation, clock):
    clock.set(evaluation.ends_at + timedelta(minutes=1))

    assert tasks.send_evaluation_ending_notices() == 0
    assert mail.outbox == []


def test_a_failed_notice_is_retried_by_the_next_run(evaluation, clock, monkeypatch):
    clock.set(evaluation.ends_at - timedelta(days=1))

    def broken(**kwargs):
        raise ConnectionRefusedError("smtp down")

    with monkeypatch.context() as patch:
        patch.setattr(emails, "send_evaluation_ending", broken)
        assert tasks.send_evaluation_ending_notices() == 0
    evaluation.refresh_from_db()
    assert evaluation.ending_notice_sent_at is None

    assert tasks.send_evaluation_ending_notices() == 1
    assert len(mail.outbox) == 1


def test_the_periodic_jobs_are_in_the_beat_schedule():
    schedule = {entry["task"] for entry in app.conf.beat_schedule.values()}

    assert tasks.send_evaluation_ending_notices.name in schedule
    assert tasks.purge_quota_ledger.name in schedule
    assert tasks.send_evaluation_ending_notices.name == (
        "billing_tiers.tasks.send_evaluation_ending_notices"
    )


def test_the_tasks_run_through_celery(evaluation, clock):
    clock.set(timezone.now() + timedelta(days=12))

    assert tasks.send_evaluation_ending_notices.delay().get(timeout=10) == 1
    assert tasks.purge_quota_ledger.delay().get(timeout=10) == 0
