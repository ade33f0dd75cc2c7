from __future__ import annotations

import pytest

from config.celery import ping

pytestmark = pytest.mark.e2e


def test_a_task_enqueued_through_redis_runs_in_the_separate_worker(real_worker):
    result = ping.delay("hello from the test")

    assert result.get(timeout=30) == "hello from the test"
    assert "rootcause.ping" in real_worker.output()


def test_readyz_reports_the_running_worker(real_worker, client):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["checks"]["workers"] == {"ok": True, "workers": 1}
