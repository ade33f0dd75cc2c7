"""Celery tasks: thin wrappers that claim a stage, run it (workers/pipeline.py), and hand on.

Tasks take ids only, never log text: a task argument is written to Redis and to worker logs.
"""

from __future__ import annotations

import logging

from celery import Task, chain, shared_task
from celery.canvas import Signature
from celery.exceptions import Ignore, SoftTimeLimitExceeded

from diagnosis import services
from diagnosis.models import Diagnosis
from workers.pipeline import STAGES, StageError

logger = logging.getLogger(__name__)

Status = Diagnosis.Status


def _run_stage(task: Task, diagnosis_id: str, stage: str) -> None:
    claim = services.claim_stage(diagnosis_id=diagnosis_id, stage=stage)
    if claim is None:
        # Past this stage, finished or failed: a duplicate delivery. Stop this copy of the chain.
        raise Ignore()
    if isinstance(claim, services.Busy):
        # Another worker holds the lease; look again when it would expire.
        raise task.retry(countdown=claim.retry_after)
    try:
        completed = STAGES[Status(stage)](claim)
    except (StageError, SoftTimeLimitExceeded) as exc:
        services.fail_diagnosis(diagnosis_id=diagnosis_id, reason=str(exc) or "stage timed out")
        raise Ignore() from None
    except Exception as exc:
        # Only the type is recorded: an exception message could quote the log.
        logger.error("stage %s of %s crashed: %s", stage, diagnosis_id, type(exc).__name__)
        services.fail_diagnosis(
            diagnosis_id=diagnosis_id, reason=f"internal error in {stage} ({type(exc).__name__})"
        )
        raise Ignore() from None
    if not completed:
        # Our lease was taken over while we worked; the new holder carries the chain on.
        raise Ignore()


def _stage_task(name: str, stage: str) -> Task:
    @shared_task(
        name=name,
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


mask = _stage_task("workers.tasks.mask", Status.MASKING)
match = _stage_task("workers.tasks.match", Status.MATCHING)
remediate = _stage_task("workers.tasks.remediate", Status.REMEDIATING)

_ORDER = [(Status.MASKING, mask), (Status.MATCHING, match), (Status.REMEDIATING, remediate)]


def pipeline_from(diagnosis_id: str, status: str) -> Signature:
    """The chain of stages still ahead of a diagnosis in `status`."""
    start = Status.MASKING if status == Status.QUEUED else Status(status)
    names = [stage for stage, _ in _ORDER]
    return chain(*(task.si(diagnosis_id) for _, task in _ORDER[names.index(start) :]))


@shared_task(name="workers.tasks.sweep_stuck_diagnoses", acks_late=True, time_limit=120)
def sweep_stuck_diagnoses() -> int:
    return services.requeue_stuck_diagnoses()
