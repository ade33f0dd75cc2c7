"""Celery tasks: one per row of the stage table, each claiming its stage, running it, and going on
with the stages after it.

Tasks take ids only, never log text: a task argument is written to Redis and to worker logs. The
message's task is named by `diagnosis.services.pipeline_from` from the stage table;
nothing imports this module but Celery's autodiscovery.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

from celery import Task, shared_task
from celery.exceptions import Ignore, SoftTimeLimitExceeded

from config.problems import outage_errors
from diagnosis import metrics, services
from diagnosis.stages import STAGES, Stage, Status, stage_of, stages_from, status_after
from workers.pipeline import RUNNERS, Carried, StageError

logger = logging.getLogger(__name__)


def _retry_later(task: Task, diagnosis_id: str, stage: Stage, exc: BaseException) -> Exception:
    """PostgreSQL or Redis went away: the same task again in a few seconds. Its retries keep
    its id, the claim's lease token, so that it recognises its own lease (services.claim_stage);
    if the staged log was lost meanwhile, the retry or the staging sweeper fails and refunds."""
    logger.warning("stage %s of %s: %s, retrying", stage.status, diagnosis_id, type(exc).__name__)
    return task.retry(countdown=min(30, 3 * (task.request.retries + 1)))


def _lease_token(task: Task) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(task.request.id))
    except ValueError:  # an id given by hand; a fresh token then
        return None


def _claim_from(task: Task, diagnosis_id: str, stage: Stage) -> services.Claim:
    """The claim on `stage` or, when the diagnosis is past it, on the first later stage it waits
    for: a message redelivered after its worker died in a later stage resumes there."""
    for candidate in stages_from(stage.status):
        try:
            claim = services.claim_stage(
                diagnosis_id=diagnosis_id,
                stage=candidate.status,
                token=_lease_token(task),
                resume=task.request.retries > 0,
            )
        except outage_errors() as exc:
            raise _retry_later(task, diagnosis_id, candidate, exc) from None
        if isinstance(claim, services.Busy):
            # Another worker holds the lease; look again when it would expire.
            raise task.retry(countdown=claim.retry_after)
        if claim is not None:
            return claim
    # Finished or failed: a duplicate delivery.
    raise Ignore()


def _run_stages(task: Task, diagnosis_id: str, first: Stage) -> None:
    """Runs `first` and every stage after it, in this task: the log is not handed to another
    worker and no message is spent between stages. Each stage is still claimed on its own (the
    completion of one claims the next in the same UPDATE, under the same lease token), so a worker
    killed in any stage is taken over at that stage. What a completed stage computed is carried
    on in memory to the next (workers.pipeline.Carried) instead of being read back from the row.

    The durations of the stages that completed are recorded together, in one Redis round trip,
    when the task leaves (done, handed to a retry, or given up), not one by one."""
    durations: list[tuple[str, float]] = []
    try:
        _run_stages_timed(task, diagnosis_id, first, durations)
    finally:
        metrics.observe_stages(durations)


def _run_stages_timed(
    task: Task, diagnosis_id: str, first: Stage, durations: list[tuple[str, float]]
) -> None:
    claim = _claim_from(task, diagnosis_id, first)
    carried = Carried()
    while True:
        stage = stage_of(claim.diagnosis.status)
        following = status_after(stage)
        if following != Status.DONE:
            claim = dataclasses.replace(claim, then=claim.token)
        started = time.monotonic()
        try:
            completed = RUNNERS[stage.status](claim, carried)
        except (StageError, SoftTimeLimitExceeded) as exc:
            services.fail_diagnosis(diagnosis_id=diagnosis_id, reason=str(exc) or "stage timed out")
            raise Ignore() from None
        except outage_errors() as exc:
            raise _retry_later(task, diagnosis_id, stage, exc) from None
        except Exception as exc:
            # Only the type is recorded: an exception message could quote the log.
            logger.error(
                "stage %s of %s crashed: %s", stage.status, diagnosis_id, type(exc).__name__
            )
            services.fail_diagnosis(
                diagnosis_id=diagnosis_id,
                reason=f"internal error in {stage.status} ({type(exc).__name__})",
            )
            raise Ignore() from None
        if not completed:
            # Our lease was taken over while we worked; the new holder carries the diagnosis on.
            raise Ignore()
        durations.append((stage.status.value, time.monotonic() - started))
        if following == Status.DONE:
            return
        # Left unclaimed only past the attempts cap, where claim_stage gives up on it.
        claim = services.handed_on(claim) or _claim_from(task, diagnosis_id, stage_of(following))


def _stage_task(stage: Stage) -> Task:
    @shared_task(
        name=stage.task,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        # The stages of a 100 MB log take seconds; these bounds catch a stuck engine, not a big log.
        soft_time_limit=240,
        time_limit=270,
        max_retries=20,
        # Nobody reads a stage's return value (the row is the result): no Redis write for it.
        ignore_result=True,
    )
    def run(self: Task, diagnosis_id: str) -> None:
        _run_stages(self, diagnosis_id, stage)

    return run


_unrun = [stage.status for stage in STAGES if stage.status not in RUNNERS]
if _unrun:  # pragma: no cover - a wiring mistake, caught at worker start
    raise ImportError(f"workers.pipeline has no runner for the stages {_unrun}")

STAGE_TASKS = {stage.status: _stage_task(stage) for stage in STAGES}


@shared_task(name="workers.tasks.sweep_stuck_diagnoses", acks_late=True, time_limit=120)
def sweep_stuck_diagnoses() -> int:
    return services.requeue_stuck_diagnoses()


@shared_task(name="workers.tasks.sweep_staging", acks_late=True, time_limit=60)
def sweep_staging() -> int:
    """Diagnoses whose staged log was lost (failed and refunded); orphan staged logs (deleted).
    Also the heartbeat that the beat's health check reads (`manage.py check_beat`)."""
    result = services.sweep_staging()
    services.record_sweep()
    return result.lost + result.orphans


@shared_task(name="workers.tasks.purge_expired_diagnoses", acks_late=True, time_limit=600)
def purge_expired_diagnoses() -> int:
    """Visitors' results past their link's lifetime, organisations' past their tier's history."""
    return services.purge_expired_diagnoses()
