"""A worker keeps its database connection from task to task, handled as Django handles a
request's: Celery's Django fix-up would otherwise close it around every task, and each diagnosis
would open a new PostgreSQL connection (and server backend)."""

from __future__ import annotations

from typing import Any

import pytest
from celery import signals
from celery.fixups.django import DjangoWorkerFixup  # type: ignore[attr-defined]  # not in the stubs
from django import db

from config.celery import DB_REUSE_MAX, app
from workers.tasks import STAGE_TASKS


class _Connection:
    def __init__(self) -> None:
        self.closed = 0
        self.checked = 0

    def close(self) -> None:
        self.closed += 1

    def close_if_unusable_or_obsolete(self) -> None:
        self.checked += 1


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch) -> _Connection:
    fake = _Connection()
    monkeypatch.setattr(db.connections, "all", lambda initialized_only=False: [fake])
    return fake


def _run_tasks(count: int, *, is_eager: bool) -> None:
    """What a worker does around each task: Celery's Django fix-up, then the task signals."""
    fixup = DjangoWorkerFixup(app)
    task = STAGE_TASKS["masking"]
    task.push_request(is_eager=is_eager)
    try:
        for _ in range(count):
            fixup.on_task_prerun(sender=task)
            signals.task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
            fixup.close_database()  # the fix-up's postrun (its cache half left out)
            signals.task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    finally:
        task.pop_request()


def test_a_worker_does_not_reconnect_for_every_task(connection: Any) -> None:
    assert DjangoWorkerFixup(app).db_reuse_max == DB_REUSE_MAX

    _run_tasks(50, is_eager=False)

    # Not closed around each task; checked before and after each one, as a request is.
    assert connection.closed <= 1
    assert connection.checked == 100


def test_a_task_run_eagerly_leaves_the_callers_connection_alone(connection: Any) -> None:
    # The embedded mode runs the pipeline inside the web request, within its transaction.
    _run_tasks(3, is_eager=True)

    assert connection.checked == 0
    assert connection.closed == 0
