"""A real `celery worker` process on Redis, for the end-to-end tests (marked e2e).

The worker is a separate OS process started from the project's own virtualenv; it connects to the
same test database as the test (so the tests use `transactional_db`: the worker must see committed
rows) and to Redis under the run's own key prefix, so that it takes tasks and answers pings of this
run only, whatever other runs share the Redis database.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from tests.redis_namespace import delete_run_keys

ROOT = Path(__file__).resolve().parents[2]


class WorkerProcess:
    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.name = f"e2e-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=INFO",
                "--concurrency=1",
                "--pool=prefork",
                "-n",
                self.name,
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a kill reaches the pool child too
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited at start:\n{self.log_path.read_text()}")
            if celery_app.control.ping(destination=[self.name], timeout=0.5):
                return
        raise RuntimeError(f"worker did not answer a ping in 60 s:\n{self.log_path.read_text()}")

    def kill(self) -> None:
        """SIGKILL the whole worker, main process and pool children, as an OOM killer would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def worker_env(transactional_db: Any) -> dict[str, str]:
    # The run's DATABASE_URL (credentials, host or socket, options) with the test database in it.
    database_url = urlsplit(settings.DATABASE_URL)._replace(
        path=f"/{connection.settings_dict['NAME']}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        SECRET_KEY=settings.SECRET_KEY,
        DATABASE_URL=database_url.geturl(),
        REDIS_URL=settings.REDIS_URL,
        REDIS_KEY_PREFIX=settings.REDIS_KEY_PREFIX,
        # Short so that a killed worker's stage is taken over within seconds in the tests.
        CELERY_VISIBILITY_TIMEOUT="6",
        DIAGNOSIS_STAGE_LEASE_SECONDS="4",
        DB_CONN_MAX_AGE="0",
    )
    return env


@pytest.fixture
def real_worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[WorkerProcess]:
    """A started worker; the test's own `.delay()` calls go through Redis, not eager mode."""
    # Tasks and results a previous test's worker left behind; other runs' keys are not ours.
    delete_run_keys()
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    worker = WorkerProcess(worker_env, tmp_path / "worker.log")
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        celery_app.conf.task_always_eager = previous
