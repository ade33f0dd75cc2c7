"""A real `celery worker` process on Redis for each end-to-end test (marked e2e).

The machinery is tests/worker.py; the tests use `transactional_db`, so that the worker, a separate
process on the same test database, sees their committed rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.redis_namespace import delete_run_keys
from tests.worker import WorkerProcess, tasks_through_redis, worker_environment


@pytest.fixture
def worker_env(transactional_db: Any) -> dict[str, str]:
    return worker_environment(
        # Short so that a killed worker's stage is taken over within seconds in the tests; the
        # lease long enough that its heartbeat (every 3 s, its holder stopping 3 s before it
        # lapses) keeps it on a machine busy enough to make that thread wait for a core.
        CELERY_VISIBILITY_TIMEOUT="6",
        DIAGNOSIS_STAGE_LEASE_SECONDS="9",
    )


@pytest.fixture
def real_worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[WorkerProcess]:
    """A started worker; the test's own `.delay()` calls go through Redis, not eager mode."""
    # Tasks and results a previous test's worker left behind; other runs' keys are not ours.
    delete_run_keys()
    with tasks_through_redis():
        worker = WorkerProcess(worker_env, tmp_path / "worker.log")
        worker.start()
        try:
            yield worker
        finally:
            worker.stop()
