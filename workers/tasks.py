"""Celery tasks: one per row of the stage table, each claiming its stage, running it, handing on.

Tasks take ids only, never log text: a task argument is written to Redis and to worker logs. The
chain is built by `diagnosis.services.pipeline_from` from the task names in the stage table;
nothing imports this module but Celery's autodiscovery.
"""

from __future__ import annotations

import logging
import time

from celery import Task, shared_task
from celery.exceptions import Ignore, SoftTimeLimitExceeded

from diagnosis import alerts, metrics, services
from diagnosis.stages import STAGES, Stage
from workers.pipeline import RUNNERS, StageError

logger = logging.getLogger(__name__)


def _run_stage(task: Task, diagnosis_id: str, stage: Stage) -> None:
    claim = services.claim_stage(diagnosis_id=diagnosis_id, stage=stage.status)
    if claim is None:
        # Past this stage, finished or failed: a duplicate delivery. Stop this copy of the chain.
        raise Ignore()
    if isinstance(claim, services.Busy):
        # Another worker holds the lease; look again when it would expire.
        raise task.retry(countdown=claim.retry_after)
    started = time.monotonic()
    try:
        completed = RUNNERS[stage.status](claim)
    except (StageError, SoftTimeLimitExceeded) as exc:
        services.fail_diagnosis(diagnosis_id=diagnosis_id, reason=str(exc) or "stage timed out")
        raise Ignore() from None
    except Exception as exc:
        # Only the type is recorded: an exception message could quote the log.
        logger.error("stage %s of %s crashed: %s", stage.status, diagnosis_id, type(exc).__name__)
        services.fail_diagnosis(
            diagnosis_id=diagnosis_id,
            reason=f"internal error in {stage.status} ({type(exc).__name__})",
        )
        raise Ignore() from None
    if not completed:
        # Our lease was taken over while we worked; the new holder carries the chain on.
        raise Ignore()
    metrics.observe_stage(stage.status.value, time.monotonic() - started)


def _stage_task(stage: Stage) -> Task:
    @shared_task(
        name=stage.task,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        # A stage of a 100 MB log takes seconds; these bounds catch a stuck engine, not a big log.
        soft_time_limit=240,
        time_limit=270,
        max_retries=20,
    )
    def run(self: Task, diagnosis_id: str) -> None:
        _run_stage(self, diagnosis_id, stage)

    return run


_unrun = [stage.status for stage in STAGES if stage.status not in RUNNERS]
if _unrun:  # pragma: no cover - a wiring mistake, caught at worker start
    raise ImportError(f"workers.pipeline has no runner for the stages {_unrun}")

STAGE_TASKS = {stage.status: _stage_task(stage) for stage in STAGES}


@shared_task(name="workers.tasks.sweep_stuck_diagnoses", acks_late=True, time_limit=120)
def sweep_stuck_diagnoses() -> int:
    return services.requeue_stuck_diagnoses()


@shared_task(name="workers.tasks.purge_expired_diagnoses", acks_late=True, time_limit=600)
def purge_expired_diagnoses() -> int:
    """Visitors' results past their link's lifetime, organisations' past their tier's history."""
    return services.purge_expired_diagnoses()


@shared_task(
    name="workers.tasks.deliver_webhook",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=60,
    time_limit=90,
)
def deliver_webhook(delivery_id: str) -> None:
    """Sends one outbox row; on a timeout, a 5xx or a 429, again later with backoff and jitter.

    The next attempt is a new message with a countdown rather than a Celery retry: the service
    bounds the attempts (a day after the event), and the outbox row, not the message, holds the
    state (when the next attempt is due, who holds it): a duplicate message does nothing, and a
    lost one is found by `sweep_pending_deliveries`.
    """
    wait = alerts.attempt_delivery(delivery_id=delivery_id)
    if isinstance(wait, alerts.Busy):
        # Another task is sending it, or was killed doing so: look again when its lease expires.
        deliver_webhook.apply_async(args=(delivery_id,), countdown=wait.retry_after)
    elif wait is not None:
        deliver_webhook.apply_async(args=(delivery_id,), countdown=wait)


@shared_task(name="workers.tasks.sweep_pending_deliveries", acks_late=True, time_limit=120)
def sweep_pending_deliveries() -> int:
    return alerts.sweep_pending_deliveries()
