"""The pipeline's stage table: one row per stage, in the order a diagnosis goes through them.

The table drives everything that follows the stages: the status a diagnosis has while a stage
runs, the status it moves to when the stage completes, its progress figure, the Celery chain that
is enqueued (by task name: `workers/` registers a task for each row and nothing here imports it),
and what the result page says while it waits. Adding a stage is one row here, a member of
`Status` and a runner in `workers/pipeline.py`; the import-time check below says if one is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models


class Status(models.TextChoices):
    QUEUED = "queued"
    MASKING = "masking"
    MATCHING = "matching"
    REMEDIATING = "remediating"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class Stage:
    status: Status  # the diagnosis's status while this stage holds it
    task: str  # the name of the Celery task that runs the stage
    percent_done: int  # the progress figure once the stage has completed
    label: str  # what the result page shows while the stage is running


STAGES: tuple[Stage, ...] = (
    Stage(Status.MASKING, "workers.tasks.mask", 40, "Masking personal data and secrets"),
    Stage(Status.MATCHING, "workers.tasks.match", 80, "Matching the log against the catalogue"),
    Stage(Status.REMEDIATING, "workers.tasks.remediate", 100, "Looking up the fix"),
)

# A diagnosis waits in QUEUED for the first stage, and ends in DONE or FAILED.
ACTIVE_STATUSES: tuple[Status, ...] = (Status.QUEUED, *(s.status for s in STAGES))
FINAL_STATUSES: tuple[Status, ...] = (Status.DONE, Status.FAILED)

if set(Status) != {*ACTIVE_STATUSES, *FINAL_STATUSES}:  # pragma: no cover - a wiring mistake
    raise ImportError("diagnosis.stages: every Status but queued/done/failed needs a stage row")

_INDEX = {stage.status: i for i, stage in enumerate(STAGES)}


def stage_of(status: str) -> Stage:
    """The stage that runs while a diagnosis is in `status` (KeyError for queued/done/failed)."""
    return STAGES[_INDEX[Status(status)]]


def stages_from(status: str) -> tuple[Stage, ...]:
    """The stages still ahead of a diagnosis in `status`: all of them while queued, the current
    one and those after it while a stage holds it, none once it has finished."""
    if status == Status.QUEUED:
        return STAGES
    index = _INDEX.get(Status(status))
    return () if index is None else STAGES[index:]


def status_after(stage: Stage) -> Status:
    """Where a diagnosis goes when `stage` completes: the next stage's status, or DONE."""
    index = _INDEX[stage.status]
    return STAGES[index + 1].status if index + 1 < len(STAGES) else Status.DONE


def may_claim(stage: Stage) -> tuple[Status, ...]:
    """The statuses from which `stage` may be claimed: its own (a retry or a take-over after an
    expired lease) and, for the first stage, QUEUED."""
    return (Status.QUEUED, stage.status) if stage is STAGES[0] else (stage.status,)
