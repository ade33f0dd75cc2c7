"""Upkeep of the diagnoses: the periodic jobs (the stuck-diagnosis and staging sweepers, the
retention purge, the sweep heartbeat) and the deletion of diagnoses with what they staged."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Organization
from accounts.selectors import require_manager
from billing_tiers.selectors import entitlements_for_organization, shortest_history_days
from diagnosis.models import Diagnosis
from diagnosis.pipeline.table import active_statuses, needs_staged
from diagnosis.services.lifecycle import enqueue_pipeline, fail_diagnosis
from diagnosis.staging import LOST_IN_OUTAGE, MASKED, RAW, get_store, staged_id, staging_key

logger = logging.getLogger(__name__)


def delete_diagnosis(*, actor: Actor, diagnosis: Diagnosis) -> None:
    """Owners and admins delete their organisation's diagnoses (members and tokens may not).

    The unit it was charged is not given back: the work was done.
    """
    organization = require_manager(actor)
    if diagnosis.organization_id != organization.pk:
        raise Http404("No such diagnosis.")
    _delete(Diagnosis.objects.filter(pk=diagnosis.pk))


def _delete(diagnoses: QuerySet[Diagnosis]) -> int:
    """Deletes the rows and anything a running pipeline still staged for them."""
    ids = [str(i) for i in diagnoses.values_list("id", flat=True)]
    if not ids:
        return 0
    deleted, _ = Diagnosis.objects.filter(id__in=ids).delete()
    get_store(settings.REDIS_URL).delete(
        *(staging_key(kind, i) for i in ids for kind in (RAW, MASKED))
    )
    return deleted


# How many rows one purge deletes at most per statement, so that no delete holds locks for long.
PURGE_BATCH = 1000


def purge_expired_diagnoses() -> int:
    """Deletes visitors' diagnoses whose link has expired, and organisations' diagnoses older
    than their tier keeps history (its history_days). The periodic purge; safe to run twice."""
    now = timezone.now()
    purged = 0
    while True:
        batch = Diagnosis.objects.filter(organization__isnull=True, expires_at__lte=now)
        count = _delete(batch.order_by()[:PURGE_BATCH])
        purged += count
        if count < PURGE_BATCH:
            break
    # No tier keeps history for less than the shortest setting: only organisations with rows
    # older than that need their tier worked out.
    oldest_kept = now - timedelta(days=shortest_history_days())
    organizations = (
        Organization.objects.filter(diagnoses__created_at__lt=oldest_kept).distinct().order_by()
    )
    for organization in organizations:
        days = entitlements_for_organization(organization).history_days
        if days is None:  # pragma: no cover - every organisation's tier keeps history
            continue
        cutoff = now - timedelta(days=days)
        while True:
            batch = Diagnosis.objects.filter(organization=organization, created_at__lt=cutoff)
            count = _delete(batch.order_by()[:PURGE_BATCH])
            purged += count
            if count < PURGE_BATCH:
                break
    if purged:
        logger.info("purged %d diagnoses past their retention", purged)
    return purged


def requeue_stuck_diagnoses() -> int:
    """Re-enqueues active diagnoses with no progress past the deadline (the beat sweeper)."""
    now = timezone.now()
    deadline = now - timedelta(seconds=settings.DIAGNOSIS_STUCK_AFTER_SECONDS)
    stuck = Diagnosis.objects.filter(status__in=active_statuses()).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=deadline)
    )
    count = 0
    for diagnosis_id, status in stuck.values_list("id", "status")[:500]:
        enqueue_pipeline(diagnosis_id, status)
        count += 1
    if count:
        logger.info("re-queued %d stuck diagnoses", count)
    return count


# Active diagnoses looked at per sweep; more wait for the next one.
SWEEP_BATCH = 5000


@dataclass(frozen=True)
class StagingSweep:
    lost: int  # diagnoses failed (and refunded) because their staged log was gone
    orphans: int  # staged logs deleted because no diagnosis row named them


def sweep_staging() -> StagingSweep:
    """The staging sweeper (beat, every STAGING_SWEEP_SECONDS; safe to run concurrently).

    1. An active diagnosis whose staged input is gone (Redis restarted and came back empty) can
       never finish: it is failed with a reason that says so, and refunded, instead of waiting
       for the stuck-diagnosis deadline. The row commits only after its log is staged, so a
       committed row without its key really lost it; the failure is a compare-and-set on the
       status seen, so a stage that completed meanwhile (and deleted its input) is left alone.
    2. A staged log no diagnosis row names (its web process was killed mid-upload, or the row
       was deleted) is deleted once nobody has written it for STAGING_ORPHAN_IDLE_SECONDS.
    """
    store = get_store(settings.REDIS_URL)
    # What each active status still needs from the staging store (the stage table's rows say).
    needs = needs_staged()
    active = list(
        Diagnosis.objects.filter(status__in=list(needs))
        .order_by("created_at")
        .values_list("id", "status")[:SWEEP_BATCH]
    )
    keys = [staging_key(needs[status], i) for i, status in active]
    lost = 0
    for (diagnosis_id, status), exists in zip(active, store.existing(keys), strict=True):
        if not exists and fail_diagnosis(
            diagnosis_id=str(diagnosis_id), reason=LOST_IN_OUTAGE, status=status
        ):
            lost += 1
    orphans = 0
    for kind in (RAW, MASKED):
        staged = {staged_id(kind, key): key for key in store.keys_of(kind)}
        if not staged:
            continue
        known: set[str] = set()
        for batch in _batches(list(staged), 1000):
            valid = [i for i in batch if _is_uuid(i)]
            known |= {
                str(i)
                for i in Diagnosis.objects.filter(
                    id__in=valid, status__in=active_statuses()
                ).values_list("id", flat=True)
            }
        for staged_as, key in staged.items():
            if staged_as in known:
                continue
            idle = store.idle_seconds(key)
            if idle is not None and idle >= settings.STAGING_ORPHAN_IDLE_SECONDS:
                store.delete(key)
                orphans += 1
    if lost or orphans:
        logger.warning("staging sweep: %d diagnoses lost their log, %d orphan keys", lost, orphans)
    return StagingSweep(lost=lost, orphans=orphans)


SWEEP_HEARTBEAT = "heartbeat:staging-sweep"


def record_sweep() -> None:
    """When the staging sweeper last ran, in the shared cache: beat's health check reads it, and
    it proves the whole chain (beat, Redis, a worker, PostgreSQL) is turning."""
    cache.set(SWEEP_HEARTBEAT, time.time(), timeout=24 * 3600)


def last_sweep_age() -> float | None:
    """Seconds since the staging sweeper last ran; None if it never did (or the cache lost it)."""
    at = cache.get(SWEEP_HEARTBEAT)
    return None if at is None else max(0.0, time.time() - float(at))


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
