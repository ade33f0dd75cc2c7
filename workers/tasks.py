"""Celery tasks, thin: each takes an id and calls a service. One task per row of the stage
table, each running the pipeline's loop from its stage (diagnosis/pipeline/loop.py), plus the
periodic jobs and the webhook delivery, and the warm-up a worker runs before its pool forks.

Tasks take ids only, never log text: a task argument is written to Redis and to worker logs. The
message's task is named by `diagnosis.services.pipeline_from` from the stage table;
nothing imports this module but Celery's autodiscovery (and workers/apps.py).
"""

from __future__ import annotations

import gc
import logging

from celery import Task, shared_task, signals
from django import db

from diagnosis import services
from diagnosis.pipeline.loop import run_stages
from diagnosis.pipeline.runners import warm_up
from diagnosis.pipeline.stage import Stage
from diagnosis.pipeline.table import STAGES

logger = logging.getLogger(__name__)


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


@signals.worker_init.connect
def warm_up_pipeline(**kwargs: object) -> None:
    """The analyzer, the engine and what masking and matching compile on first use, built in the
    worker's main process before its pool forks (diagnosis.pipeline.runners.warm_up): every child
    starts with them. A failure (PostgreSQL not up yet) only leaves each child to build them on
    its first diagnosis, as it would without this."""
    try:
        warm_up()
    except Exception as exc:
        logger.warning("pipeline warm-up failed: %s", type(exc).__name__)
    finally:
        # No connection of this process's crosses the fork into the children.
        db.connections.close_all()
    # What start-up made lives as long as the process: out of the collector's sight, so that a
    # child's full collections (about 0.4 s over the ~190,000 objects of a warm worker) do not
    # walk it, nor copy the pages the children share with this process by touching them.
    gc.collect()
    gc.freeze()
