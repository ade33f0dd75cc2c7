"""The loop a Celery task runs: claim a stage, run its runner, complete it, go on to the next.

`workers/tasks.py` registers one task per row of the stage table, each a call of `run_stages`
with its row; everything else about running a stage (leases and their heartbeat, retries,
failures, the hand-on of the next claim, what is carried in memory, the stage durations) is
here, beside the table.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

from celery import Task
from celery.exceptions import Ignore, SoftTimeLimitExceeded

from diagnosis import metrics
from diagnosis.pipeline.lease import heartbeat
from diagnosis.pipeline.stage import Carried, LeaseLost, Stage, StageError, Status
from diagnosis.pipeline.table import stage_of, stages_from, status_after
from diagnosis.services import lifecycle
from plumbing.problems import outage_errors

logger = logging.getLogger(__name__)


def _retry_later(task: Task, diagnosis_id: str, stage: Stage, exc: BaseException) -> Exception:
    """PostgreSQL or Redis went away: the same task again in a few seconds. Its retries keep
    its id, the claim's lease token, so that it recognises its own lease (lifecycle.claim_stage);
    if the staged log was lost meanwhile, the retry or the staging sweeper fails and refunds."""
    logger.warning("stage %s of %s: %s, retrying", stage.status, diagnosis_id, type(exc).__name__)
    return task.retry(countdown=min(30, 3 * (task.request.retries + 1)))


def _lease_token(task: Task) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(task.request.id))
    except ValueError:  # an id given by hand; a fresh token then
        return None


def _claim_from(task: Task, diagnosis_id: str, stage: Stage) -> lifecycle.Claim:
    """The claim on `stage` or, when the diagnosis is past it, on the first later stage it waits
    for: a message redelivered after its worker died in a later stage resumes there."""
    for candidate in stages_from(stage.status):
        try:
            claim = lifecycle.claim_stage(
                diagnosis_id=diagnosis_id,
                stage=candidate.status,
                token=_lease_token(task),
                resume=task.request.retries > 0,
            )
        except outage_errors() as exc:
            raise _retry_later(task, diagnosis_id, candidate, exc) from None
        if isinstance(claim, lifecycle.Busy):
            # Another worker holds the lease; look again when it would expire.
            raise task.retry(countdown=claim.retry_after)
        if claim is not None:
            return claim
    # Finished or failed: a duplicate delivery.
    raise Ignore()


def run_stages(task: Task, diagnosis_id: str, first: Stage) -> None:
    """Runs `first` and every stage after it, in this task: the log is not handed to another
    worker and no message is spent between stages. Each stage is still claimed on its own (the
    completion of one claims the next in the same UPDATE, under the same lease token), so a worker
    killed in any stage is taken over at that stage. What a completed stage computed is carried
    on in memory to the next (stage.Carried) instead of being read back from the row.

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
        following = status_after(stage, claim.diagnosis.kind)
        if following != Status.DONE:
            claim = dataclasses.replace(claim, then=claim.token)
        started = time.monotonic()
        completed = _run_held(task, claim, stage, carried)
        if not completed:
            # Our lease was taken over while we worked; the new holder carries the diagnosis on.
            raise Ignore()
        durations.append((stage.status, time.monotonic() - started))
        if following == Status.DONE:
            return
        # Left unclaimed only past the attempts cap, where claim_stage gives up on it.
        claim = lifecycle.handed_on(claim) or _claim_from(task, diagnosis_id, stage_of(following))


def _run_held(task: Task, claim: lifecycle.Claim, stage: Stage, carried: Carried) -> bool:
    """Runs `stage` while the heartbeat renews its lease, the runner checking it between chunks
    of its work (lease.py); not for a task run eagerly (the embedded mode), which nothing else
    can take over."""
    if getattr(task.request, "is_eager", False):
        return _run_one(task, claim, stage, carried)
    with heartbeat.holding(claim) as lease:
        return _run_one(task, dataclasses.replace(claim, check=lease.check), stage, carried)


def _run_one(task: Task, claim: lifecycle.Claim, stage: Stage, carried: Carried) -> bool:
    """Runs `stage` under `claim` and completes it; False if the lease was lost meanwhile.
    A failure no retry fixes fails the diagnosis (and the task is ignored); a connection error
    retries the task. Failing is fenced like completing: only while the lease is still ours."""
    diagnosis_id = str(claim.diagnosis.id)
    try:
        output = stage.runner(claim, carried)
        completed = lifecycle.complete_stage(claim, fields=output.fields)
        if completed and output.after is not None:
            output.after()
    except LeaseLost as exc:
        # Stopped at a check: what the runner did so far is discarded, nothing more is written.
        logger.warning("stage %s of %s stopped: %s", stage.status, diagnosis_id, exc)
        return False
    except (StageError, SoftTimeLimitExceeded) as exc:
        lifecycle.fail_diagnosis(
            diagnosis_id=diagnosis_id, reason=str(exc) or "stage timed out", token=claim.token
        )
        raise Ignore() from None
    except outage_errors() as exc:
        raise _retry_later(task, diagnosis_id, stage, exc) from None
    except Exception as exc:
        # Only the type is recorded: an exception message could quote the log.
        logger.error("stage %s of %s crashed: %s", stage.status, diagnosis_id, type(exc).__name__)
        lifecycle.fail_diagnosis(
            diagnosis_id=diagnosis_id,
            reason=f"internal error in {stage.status} ({type(exc).__name__})",
            token=claim.token,
        )
        raise Ignore() from None
    return completed
