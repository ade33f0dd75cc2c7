"""Celery tasks, thin: each takes an id and calls a service. One task per row of the stage
table, each running the pipeline's loop from its stage (diagnosis/pipeline/loop.py), plus the
periodic jobs and the webhook delivery.

Tasks take ids only, never log text: a task argument is written to Redis and to worker logs. The
message's task is named by `diagnosis.services.pipeline_from` from the stage table;
nothing imports this module but Celery's autodiscovery (and workers/apps.py).
"""

from __future__ import annotations

from celery import Task, shared_task

from diagnosis import services
from diagnosis.pipeline.loop import run_stages
from diagnosis.pipeline.stage import Stage
from diagnosis.pipeline.table import STAGES


def stage_task(stage: Stage) -> Task:
    """The Celery task that starts the pipeline at `stage` (registered under `stage.task`)."""

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
        run_stages(self, diagnosis_id, stage)

    return run


STAGE_TASKS = {stage.status: stage_task(stage) for stage in STAGES}


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
