"""`make test`'s launcher: it names an unreachable service it was pointed at, uses running ones,
and starts throwaway ones when nothing runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.with_services import free_port, unreachable

ROOT = Path(__file__).resolve().parents[2]


def _launch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.with_services", *args],
        cwd=ROOT,
        env=os.environ if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unreachable_service_that_was_set_stops_it_at_once_naming_it(tmp_path):
    ran = tmp_path / "ran"

    result = _launch(
        "--", "touch", str(ran), env={**os.environ, "REDIS_URL": "redis://127.0.0.1:1/0"}
    )

    assert result.returncode == 1
    assert "Redis at 127.0.0.1:1 (REDIS_URL) is unreachable" in result.stderr
    assert "PostgreSQL at" not in result.stderr
    assert not ran.exists()


def test_running_services_are_used_and_the_exit_status_is_passed_on():
    script = (
        "import os, sys; print(os.environ['DATABASE_URL'], os.environ['REDIS_URL']); sys.exit(3)"
    )

    result = _launch("--", sys.executable, "-c", script)

    assert result.returncode == 3, result.stderr
    assert result.stdout.split() == [os.environ["DATABASE_URL"], os.environ["REDIS_URL"]]
    assert "throwaway" not in result.stderr


CONNECT_TO_BOTH = """
import os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
    connection.execute("CREATE DATABASE proof")
redis.Redis.from_url(os.environ["REDIS_URL"]).set("proof", 1)
print(os.environ["DATABASE_URL"], os.environ["REDIS_URL"])
raise SystemExit(1)  # a failing run stops the servers all the same
"""


@pytest.mark.e2e  # starts real servers: a few seconds
def test_with_nothing_running_throwaway_servers_serve_the_run_and_are_stopped_after_it():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    nothing_at = f"127.0.0.1:{free_port()}"

    result = _launch(
        f"--default-database-url=postgres://postgres@{nothing_at}/rootcause",
        f"--default-redis-url=redis://{nothing_at}/15",
        "--",
        sys.executable,
        "-c",
        CONNECT_TO_BOTH,
        env=env,
    )

    assert result.returncode == 1, result.stderr
    database_url, redis_url = result.stdout.split()
    assert f"started a throwaway PostgreSQL at {database_url}" in result.stderr
    assert f"started a throwaway Redis at {redis_url}" in result.stderr
    assert "stopped the throwaway PostgreSQL and Redis" in result.stderr
    assert unreachable(database_url, 5432) is not None
    assert unreachable(redis_url, 6379) is not None
    directory = result.stderr.rpartition("removed ")[2].strip()
    assert directory.startswith("/")
    assert not Path(directory).exists()
