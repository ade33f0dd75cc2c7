"""Writes of the diagnosis life cycle: intake, stage claims with leases, completion and failure."""

from __future__ import annotations

import hashlib
import hmac
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from typing import Any

import celery
from celery.canvas import Signature
from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import Organization
from config.problems import ApplicationError, PayloadTooLarge
from diagnosis.models import Diagnosis
from diagnosis.stages import STAGES, may_claim, stage_of, stages_from, status_after
from diagnosis.staging import RAW, get_store, staging_key
from rootcause.intake import not_a_log
from rootcause.masking import Masker

logger = logging.getLogger(__name__)

Status = Diagnosis.Status


def masking_secret(diagnosis_id: uuid.UUID | str) -> bytes:
    """Per-diagnosis pseudonym key: stable across retries of one diagnosis, unrelated across two."""
    return hmac.new(
        settings.SECRET_KEY.encode(), f"mask:{diagnosis_id}".encode(), hashlib.sha256
    ).digest()


class LogRejected(ApplicationError):
    title = "Log rejected"


def _limited(chunks: Iterable[bytes], limit: int) -> Iterable[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise PayloadTooLarge(f"The log is larger than the limit of {limit} bytes.")
        yield chunk


def _masked_filename(filename: str, diagnosis_id: uuid.UUID) -> str:
    """The name is shown back to the user: only its last component, masked like the log."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].replace("\n", " ")
    return Masker(secret=masking_secret(diagnosis_id)).mask(base)[:255]


def submit_diagnosis(
    *,
    organization: Organization,
    chunks: Iterable[bytes],
    source: str,
    created_by: User | None = None,
    filename: str = "",
    idempotency_key: str = "",
) -> tuple[Diagnosis, bool]:
    """Accepts a log: creates the row, stages the raw bytes, enqueues the pipeline after commit.

    Returns (diagnosis, created). A repeated Idempotency-Key returns the first diagnosis unchanged.
    """
    if idempotency_key:
        existing = Diagnosis.objects.filter(
            organization=organization, idempotency_key=idempotency_key
        ).first()
        if existing is not None:
            return existing, False

    iterator = iter(chunks)
    first = next((c for c in iterator if c), b"")
    if not first:
        raise LogRejected("The log is empty.")
    reason = not_a_log(first)
    if reason:
        raise LogRejected(f"The log {reason}.")

    diagnosis_id = uuid.uuid4()
    store = get_store(settings.REDIS_URL)
    raw_key = staging_key(RAW, diagnosis_id)
    try:
        size = store.write(
            raw_key,
            _limited(chain([first], iterator), settings.ROOTCAUSE_MAX_LOG_BYTES),
            ttl_seconds=settings.ROOTCAUSE_RAW_TTL_SECONDS,
        )
        with transaction.atomic():
            diagnosis = Diagnosis.objects.create(
                id=diagnosis_id,
                organization=organization,
                created_by=created_by,
                source=source,
                filename=_masked_filename(filename, diagnosis_id),
                size_bytes=size,
                idempotency_key=idempotency_key,
            )
            transaction.on_commit(lambda: enqueue_pipeline(diagnosis.id, Status.QUEUED))
    except IntegrityError:
        # Two requests with the same Idempotency-Key raced; the other one won.
        store.delete(raw_key)
        return Diagnosis.objects.get(
            organization=organization, idempotency_key=idempotency_key
        ), False
    except BaseException:
        store.delete(raw_key)
        raise
    return diagnosis, True


def pipeline_from(diagnosis_id: str, status: str) -> Signature:
    """The chain of the stages still ahead of a diagnosis in `status`, named by task.

    Tasks are named, not imported: `workers/` sits above this app and registers them.
    """
    return celery.chain(
        *(
            celery.signature(s.task, args=(diagnosis_id,), immutable=True)
            for s in stages_from(status)
        )
    )


def enqueue_pipeline(diagnosis_id: uuid.UUID, status: str) -> None:
    pipeline_from(str(diagnosis_id), status).apply_async()


@dataclass(frozen=True)
class Claim:
    """The right to run one stage of one diagnosis until the lease expires."""

    diagnosis: Diagnosis
    token: uuid.UUID


@dataclass(frozen=True)
class Busy:
    """Another worker holds the stage; try again after this many seconds."""

    retry_after: float


def claim_stage(*, diagnosis_id: str, stage: str) -> Claim | Busy | None:
    """Compare-and-set: take `stage` of the diagnosis if it is waiting for it or its lease expired.

    None means there is nothing to do: the diagnosis is past this stage, finished or failed.
    """
    now = timezone.now()
    token = uuid.uuid4()
    waiting_for = Q(status__in=may_claim(stage_of(stage))) & (
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    )
    # Each stage may be attempted DIAGNOSIS_MAX_ATTEMPTS times; attempts count every stage claim.
    max_attempts = settings.DIAGNOSIS_MAX_ATTEMPTS * len(STAGES)
    claimed = Diagnosis.objects.filter(
        waiting_for, id=diagnosis_id, attempts__lt=max_attempts
    ).update(
        status=stage,
        lease_expires_at=now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS),
        lease_token=token,
        attempts=F("attempts") + 1,
        updated_at=now,
    )
    row = Diagnosis.objects.filter(id=diagnosis_id).first()
    if row is None:
        return None
    if claimed:
        return Claim(row, token)
    lease_live = row.lease_expires_at is not None and row.lease_expires_at >= now
    if row.status in Diagnosis.ACTIVE_STATUSES and not lease_live and row.attempts >= max_attempts:
        fail_diagnosis(diagnosis_id=diagnosis_id, reason="gave up after repeated worker failures")
        return None
    if row.status == stage and lease_live:
        assert row.lease_expires_at is not None
        return Busy(max(1.0, (row.lease_expires_at - now).total_seconds()))
    return None


def complete_stage(claim: Claim, *, fields: dict[str, Any] | None = None) -> bool:
    """Hands the diagnosis on to the next stage, only if this claim still holds the lease."""
    stage = stage_of(claim.diagnosis.status)
    next_status = status_after(stage)
    values: dict[str, Any] = {
        "status": next_status,
        "progress": stage.percent_done,
        "lease_expires_at": None,
        "lease_token": None,
        "updated_at": timezone.now(),
        **(fields or {}),
    }
    if next_status == Status.DONE:
        values["finished_at"] = values["updated_at"]
    changed = Diagnosis.objects.filter(
        id=claim.diagnosis.id, status=claim.diagnosis.status, lease_token=claim.token
    ).update(**values)
    return changed == 1


def fail_diagnosis(*, diagnosis_id: str, reason: str) -> bool:
    """Marks an active diagnosis failed for a reason on our side. The raw log goes with it."""
    now = timezone.now()
    changed = Diagnosis.objects.filter(
        id=diagnosis_id, status__in=Diagnosis.ACTIVE_STATUSES
    ).update(
        status=Status.FAILED,
        failure_reason=reason[:255],
        lease_expires_at=None,
        lease_token=None,
        updated_at=now,
        finished_at=now,
    )
    if changed:
        get_store(settings.REDIS_URL).delete(
            staging_key(RAW, diagnosis_id), staging_key("masked", diagnosis_id)
        )
        logger.warning("diagnosis %s failed: %s", diagnosis_id, reason)
    return changed == 1


def requeue_stuck_diagnoses() -> int:
    """Re-enqueues active diagnoses with no progress past the deadline (the beat sweeper)."""
    now = timezone.now()
    deadline = now - timedelta(seconds=settings.DIAGNOSIS_STUCK_AFTER_SECONDS)
    stuck = Diagnosis.objects.filter(status__in=Diagnosis.ACTIVE_STATUSES).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=deadline)
    )
    count = 0
    for diagnosis_id, status in stuck.values_list("id", "status")[:500]:
        enqueue_pipeline(diagnosis_id, status)
        count += 1
    if count:
        logger.info("re-queued %d stuck diagnoses", count)
    return count
