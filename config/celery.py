"""The Celery app. Its settings are the CELERY_* names in config/settings.py."""

from __future__ import annotations

import os

from celery import Celery, Task, signals
from django import db
from django.conf import settings

from plumbing.broker import TaskPublisher

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("rootcause")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "diagnosis", "billing_tiers", "alerts"])

# Database connections in a worker. Celery's Django fix-up closes every connection before and
# after each task unless CELERY_DB_REUSE_MAX is set: a new PostgreSQL connection (and a new server
# backend, with cold caches) for every diagnosis, which cost more CPU than the pipeline's queries.
# With it set, the fix-up closes them only every DB_REUSE_MAX tasks, and between tasks they are
# handled as Django handles them between requests (below): closed when an error left them
# unusable or when older than CONN_MAX_AGE, and checked on reuse (CONN_HEALTH_CHECKS: a poll of
# its socket, then a SELECT 1 if the server has spoken; plumbing/postgresql/base.py), so a
# connection that died while idle is replaced before the task uses it.
DB_REUSE_MAX = 1000
app.conf.update(CELERY_DB_REUSE_MAX=DB_REUSE_MAX)


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_unusable_or_obsolete_connections(sender: Task | None = None, **kwargs: object) -> None:
    """What Django does at the start and end of each request, at the start and end of each task.
    Not for a task run eagerly (the embedded mode): it runs inside the caller's request."""
    if sender is None or getattr(sender.request, "is_eager", False):
        return
    for connection in db.connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()


# Every periodic job, in one place; each is safe to run concurrently with itself.
app.conf.beat_schedule = {
    "sweep-stuck-diagnoses": {
        "task": "workers.tasks.sweep_stuck_diagnoses",
        "schedule": float(settings.DIAGNOSIS_SWEEP_SECONDS),
    },
    # Alert deliveries whose message was lost (a worker killed between commit and publication):
    # alerts/tasks.py, under the name it had in workers/tasks.py.
    "sweep-pending-deliveries": {
        "task": "workers.tasks.sweep_pending_deliveries",
        "schedule": 60.0,
    },
    # Fails (and refunds) diagnoses whose staged log was lost with Redis, and deletes staged logs
    # no diagnosis names (a web process killed mid-upload): within a minute of either.
    "sweep-staging": {
        "task": "workers.tasks.sweep_staging",
        "schedule": float(settings.STAGING_SWEEP_SECONDS),
    },
    # E-mails managers a few days before their Scale evaluation ends; each notice is sent once.
    "evaluation-ending-notices": {
        "task": "billing_tiers.tasks.send_evaluation_ending_notices",
        "schedule": 3600.0,
    },
    # Deletes visitors' results once their link expires (ANONYMOUS_RESULT_HOURS) and history past
    # the organisation's tier's retention (TIER_HISTORY_DAYS); the links stop working on time
    # anyway, this removes the rows.
    "purge-expired-diagnoses": {
        "task": "workers.tasks.purge_expired_diagnoses",
        "schedule": 3600.0,
    },
    "purge-quota-ledger": {
        "task": "billing_tiers.tasks.purge_quota_ledger",
        "schedule": 86400.0,
    },
}


@app.task(name="rootcause.ping")
def ping(value: str = "pong") -> str:
    """A trivial round trip used by the readiness probe's tests and the end-to-end suite."""
    return value


# The web's task messages, one LPUSH each (plumbing/broker.py): the diagnosis pipeline's.
publisher = TaskPublisher(app)
