"""A real `celery worker` process on Redis, shared by the end-to-end and the browser tests.

The worker is a separate OS process started from the project's own virtualenv; it connects to the
same test database as the tests (which therefore commit: `transactional_db`, or the live server's
transactional access) and to Redis under the run's own key prefix, so that it takes tasks and
answers pings of this run only, whatever other runs share the Redis database.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[1]


def database_url(name: str) -> str:
    """The run's DATABASE_URL (credentials, host or socket, options) naming database `name` on
    the same server."""
    return urlsplit(settings.DATABASE_URL)._replace(path=f"/{name}").geturl()


def worker_environment(**overrides: str) -> dict[str, str]:
    """The worker's environment: this run's test database (by name), Redis URL and key prefix."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        SECRET_KEY=settings.SECRET_KEY,
        DATABASE_URL=database_url(connection.settings_dict["NAME"]),
        REDIS_URL=settings.REDIS_URL,
        REDIS_KEY_PREFIX=settings.REDIS_KEY_PREFIX,
        DB_CONN_MAX_AGE="0",
    )
    env.update(overrides)
    return env


class WorkerProcess:
    def __init__(self, env: dict[str, str], log_path: Path, name: str = "e2e") -> None:
        self.env = env
        self.log_path = log_path
        self.name = f"{name}-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
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

    def wait_idle(self, timeout: float = 60) -> None:
        """Until the worker runs no task (one left by an earlier test, say)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            active = celery_app.control.inspect([self.name], timeout=1).active() or {}
            if not active.get(self.name):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker still busy after {timeout} s:\n{self.output()[-2000:]}")

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The whole worker stopped (SIGSTOP) inside the block: tasks wait in Redis meanwhile.
        It is stopped between tasks, never in the middle of one (holding a lock, say)."""
        assert self.process is not None
        self.wait_idle()
        os.killpg(self.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)  # a paused worker cannot act on TERM
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Logging(Protocol):
    """A process a test started, logging to a file it can read (WorkerProcess, tests/e2e/stack.py's
    Process)."""

    name: str

    def output(self) -> str: ...
    def alive(self) -> bool: ...


def wait_for_output(process: Logging, text: str, timeout: float = 60) -> str:
    """The process's output once `text` is in it; an error at once if the process has ended.
    A task writes its log line a moment after its last commit, which the test may already have
    seen."""
    deadline = time.monotonic() + timeout
    while text not in (output := process.output()):
        if not process.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{process.name}: no {text!r}:\n{output[-3000:]}")
        time.sleep(0.1)
    return output


@contextlib.contextmanager
def tasks_through_redis() -> Iterator[None]:
    """This process's `.delay()` calls go to Redis (for a worker) instead of running eagerly."""
    celery_app.conf.task_always_eager = False
    try:
        yield
    finally:
        # Taken off Celery's own changes, not set back: the value comes from Django's settings
        # again, so that override_settings(CELERY_TASK_ALWAYS_EAGER=…) reaches Celery after this.
        changes: Any = celery_app.conf.changes  # a dict once the configuration is read
        changes.pop("task_always_eager", None)
