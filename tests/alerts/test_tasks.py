"""The alerts' tasks live in alerts/tasks.py under the names they had in workers/tasks.py: a
delivery is enqueued by name and scheduled retries wait in Redis across a deploy, so the names
must still find the tasks; the beat names only registered tasks."""

from __future__ import annotations

from alerts import services, tasks
from config.celery import app


def test_the_delivery_task_is_found_by_the_name_it_is_enqueued_under():
    assert services.DELIVER_TASK == "workers.tasks.deliver_webhook"
    assert app.tasks[services.DELIVER_TASK] == tasks.deliver_webhook  # (a proxy: not `is`)
    assert app.tasks["workers.tasks.sweep_pending_deliveries"] == tasks.sweep_pending_deliveries


def test_every_periodic_job_names_a_registered_task():
    app.loader.import_default_modules()  # what a worker does: autodiscovery, alerts' tasks too
    for job in app.conf.beat_schedule.values():
        assert job["task"] in app.tasks
