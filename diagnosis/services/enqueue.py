"""After a submission's row commits: its staged input gets its backstop TTL and its pipeline is
enqueued, in one round trip to Redis when there is a broker; what happens when either fails."""

from __future__ import annotations

import contextlib
import logging
import uuid

import redis
from django.conf import settings
from django.utils import timezone

from config.celery import app as celery_app
from config.celery import publisher as task_publisher
from diagnosis.models import Diagnosis
from diagnosis.services.lifecycle import enqueue_pipeline, fail_diagnosis, pipeline_from
from diagnosis.staging import LOST_IN_OUTAGE, RedisStagingStore, get_store
from plumbing.broker import QueuedMessage
from plumbing.problems import ServiceUnavailable, outage_errors

logger = logging.getLogger(__name__)

Status = Diagnosis.Status


def keep_and_enqueue(diagnosis_id: uuid.UUID, raw_key: str) -> None:
    """After the row commits: the staged log gets its backstop TTL, and the chain is enqueued.

    With a broker, both in one round trip to Redis, the message only if the log is still there
    (`RedisStagingStore.expire_and_push`; the embedded mode has no queue: its tasks run here).
    If the log is already gone (Redis restarted since it was staged), the diagnosis is failed
    and refunded at once and the caller gets a 503, never a 202 for a log that was not kept. If
    only the enqueue fails (the message could not be made), the log and the row are kept, and
    the row is marked due for the stuck sweeper's next round (`due_for_the_sweeper`), which
    enqueues it again.
    """
    store = get_store(settings.REDIS_URL)
    ttl = settings.ROOTCAUSE_RAW_TTL_SECONDS
    broker = store if isinstance(store, RedisStagingStore) else None
    message = queued_message(diagnosis_id) if broker is not None else None
    try:
        if broker is not None and message is not None:
            kept = broker.expire_and_push(raw_key, ttl, message.key, message.payload)
        else:
            kept = store.expire(raw_key, ttl)
    except redis.RedisError:
        kept = False
    if not kept:
        fail_diagnosis(diagnosis_id=str(diagnosis_id), reason=LOST_IN_OUTAGE)
        raise ServiceUnavailable()
    if message is not None:
        return
    try:
        enqueue_pipeline(diagnosis_id, Status.QUEUED)
    except outage_errors() as exc:
        logger.warning(
            "could not enqueue diagnosis %s (%s); the sweeper will",
            diagnosis_id,
            type(exc).__name__,
        )
        due_for_the_sweeper(diagnosis_id)


def queued_message(diagnosis_id: uuid.UUID) -> QueuedMessage | None:
    """The new diagnosis' task message, for the staging store to push with the log's TTL; None
    in the embedded mode (Celery runs the task in-process) or when it cannot be made (the
    broker away: `enqueue_pipeline` is then tried on its own, and the sweeper after it). The
    broker is the staging store's Redis: both are REDIS_URL (config/settings.py)."""
    if celery_app.conf.task_always_eager:
        return None
    task = pipeline_from(Status.QUEUED)
    assert task is not None  # a queued diagnosis always has a stage to run
    try:
        return task_publisher.message_for(task, (str(diagnosis_id),))
    except outage_errors():
        return None


def due_for_the_sweeper(diagnosis_id: uuid.UUID) -> None:
    """A queued diagnosis whose message was never published: its lease is set to expire now, so
    that the stuck sweeper's next round (every DIAGNOSIS_SWEEP_SECONDS) enqueues it, and not
    only once it has made no progress for DIAGNOSIS_STUCK_AFTER_SECONDS. An expired lease is
    what any worker may claim, so a message that did get through meanwhile still runs it.
    With PostgreSQL away too, the row keeps waiting for the stuck deadline."""
    with contextlib.suppress(*outage_errors()):
        Diagnosis.objects.filter(
            id=diagnosis_id, status=Status.QUEUED, lease_expires_at__isnull=True
        ).update(lease_expires_at=timezone.now())
