"""The life cycle of a diagnosis: leases, takeovers, fencing, failure and the sweeper."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from diagnosis import services
from diagnosis.models import Diagnosis
from diagnosis.services import upkeep

pytestmark = pytest.mark.django_db

Status = Diagnosis.Status


@pytest.fixture
def queued(acme) -> Diagnosis:
    return Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)


def test_the_first_claim_wins_and_a_second_is_told_to_wait(queued):
    first = services.claim_stage(diagnosis_id=str(queued.id), stage="masking")
    second = services.claim_stage(diagnosis_id=str(queued.id), stage="masking")

    assert isinstance(first, services.Claim)
    assert first.diagnosis.status == "masking"
    assert isinstance(second, services.Busy)
    assert second.retry_after >= 1


def test_a_stage_already_passed_has_nothing_to_do(queued):
    claim = services.claim_stage(diagnosis_id=str(queued.id), stage="masking")
    assert isinstance(claim, services.Claim)
    assert services.complete_stage(claim)

    assert services.claim_stage(diagnosis_id=str(queued.id), stage="masking") is None
    queued.refresh_from_db()
    assert (queued.status, queued.progress) == ("matching", 40)


def test_an_expired_lease_is_taken_over_and_the_old_holder_cannot_complete(queued):
    old = services.claim_stage(diagnosis_id=str(queued.id), stage="masking")
    Diagnosis.objects.filter(id=queued.id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    new = services.claim_stage(diagnosis_id=str(queued.id), stage="masking")

    assert isinstance(old, services.Claim)
    assert isinstance(new, services.Claim)
    assert services.complete_stage(old) is False
    assert services.complete_stage(new) is True


@override_settings(DIAGNOSIS_MAX_ATTEMPTS=1)
def test_a_diagnosis_that_keeps_crashing_workers_is_failed(queued):
    Diagnosis.objects.filter(id=queued.id).update(
        attempts=3, status="masking", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert services.claim_stage(diagnosis_id=str(queued.id), stage="masking") is None

    queued.refresh_from_db()
    assert queued.status == Status.FAILED
    assert "repeated worker failures" in queued.failure_reason


def test_failing_only_touches_active_diagnoses(queued):
    assert services.fail_diagnosis(diagnosis_id=str(queued.id), reason="boom") is True
    assert services.fail_diagnosis(diagnosis_id=str(queued.id), reason="again") is False

    queued.refresh_from_db()
    assert queued.failure_reason == "boom"


@override_settings(DIAGNOSIS_STUCK_AFTER_SECONDS=60)
def test_the_sweeper_requeues_only_stuck_diagnoses(acme, monkeypatch):
    sent = []
    monkeypatch.setattr(upkeep, "enqueue_pipeline", lambda i, s: sent.append((i, s)))
    old = timezone.now() - timedelta(minutes=5)
    stuck_queued = Diagnosis.objects.create(organization=acme, source="api", size_bytes=1)
    fresh = Diagnosis.objects.create(organization=acme, source="api", size_bytes=1)
    expired = Diagnosis.objects.create(
        organization=acme,
        source="api",
        size_bytes=1,
        status="matching",
        lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    leased = Diagnosis.objects.create(
        organization=acme,
        source="api",
        size_bytes=1,
        status="masking",
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )
    done = Diagnosis.objects.create(
        organization=acme, source="api", size_bytes=1, status=Status.DONE
    )
    Diagnosis.objects.filter(id__in=[stuck_queued.id, done.id, leased.id]).update(updated_at=old)

    assert services.requeue_stuck_diagnoses() == 2

    assert sorted(sent) == sorted([(stuck_queued.id, "queued"), (expired.id, "matching")])
    assert fresh.id not in {i for i, _ in sent}


def test_the_message_starts_at_the_stage_a_diagnosis_is_in():
    # One message: its task goes on through the later stages itself (workers/tasks.py).
    assert services.pipeline_from("queued") == "workers.tasks.mask"
    assert services.pipeline_from("matching") == "workers.tasks.match"
    assert services.pipeline_from("done") is None
