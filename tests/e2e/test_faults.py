"""Faults with real processes: Redis restarted under load, the web process killed mid-upload, and
PostgreSQL away for a few seconds (docs/operations.md).

Each test starts what it breaks — its own redis-server on a free port, a gunicorn with the
repository's gunicorn.conf.py, a Celery worker and beat, and for the PostgreSQL test a throwaway
PostgreSQL (tests/with_services.py's) holding a copy of the test database — so that the shared
Redis and PostgreSQL of the machine are never restarted.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test import override_settings

from billing_tiers.models import QuotaCharge
from diagnosis import services
from diagnosis.models import Diagnosis
from diagnosis.staging import MASKED, RAW, get_store
from tests.diagnosis.logs import OOM_LOG
from tests.e2e import stack
from tests.worker import wait_for_output, worker_environment

pytestmark = pytest.mark.e2e

URL = "/api/v1/diagnoses"
FINAL = ("done", "failed")
SECRET = (
    "hf_" + "Zq8vLm2Xr4Tn6Wp0Ys3Ku5Jd7Hb9Gc1Fa"
)  # a planted token: it must not outlive the kill


def _wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {timeout} s")
        time.sleep(0.2)


@pytest.fixture
def own_redis(tmp_path: Path, transactional_db: Any) -> Iterator[stack.OwnRedis]:
    """This test's redis-server; the test's rows are committed, for the processes to see."""
    redis_server = stack.OwnRedis(tmp_path)
    redis_server.start()
    try:
        with override_settings(REDIS_URL=redis_server.url):
            yield redis_server
    finally:
        redis_server.kill()


def _environment(redis_url: str, **overrides: str) -> dict[str, str]:
    settings = dict(
        REDIS_URL=redis_url,
        # The test's own allowance and bursts: it submits many diagnoses from one address.
        TIER_FREE_DAILY_DIAGNOSES="100000",
        THROTTLE_SUBMISSIONS_PER_ADDRESS="100000/minute",
        THROTTLE_SUBMISSIONS_PER_ORGANIZATION="100000/minute",
        # Short, so that what the faults leave behind is found within seconds.
        DIAGNOSIS_STAGE_LEASE_SECONDS="4",
        CELERY_VISIBILITY_TIMEOUT="6",
        STAGING_SWEEP_SECONDS="2",
        DIAGNOSIS_SWEEP_SECONDS="2",
        STAGING_ORPHAN_IDLE_SECONDS="1",
        GUNICORN_WORKERS="1",
        LOG_LEVEL="INFO",
    )
    return worker_environment(**{**settings, **overrides})


def _token_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}


def _assert_outage_answer(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith("/service-unavailable")
    assert int(response.headers["Retry-After"]) > 0


def test_redis_restarted_under_load_leaves_no_dead_worker_and_no_stuck_diagnosis(
    own_redis, catalogue, acme_token, tmp_path
):
    env = _environment(own_redis.url)
    worker = stack.worker(env, tmp_path / "worker.log", concurrency=2)
    beat = stack.beat(env, tmp_path / "beat.log", tmp_path)
    port = stack.free_port()
    web = stack.gunicorn(env, tmp_path / "web.log", port)
    base = f"http://127.0.0.1:{port}"
    for process in (worker, beat, web):
        process.start()
    try:
        stack.wait_until_serving(base, web)
        wait_for_output(worker, " ready.")
        accepted: list[str] = []
        answers: Counter[int] = Counter()
        unexpected: list[str] = []
        stop = threading.Event()

        def submit() -> None:
            with httpx.Client(base_url=base, timeout=30) as client:
                while not stop.is_set():
                    response = client.post(
                        URL, content=OOM_LOG.encode(), headers=_token_headers(acme_token)
                    )
                    answers[response.status_code] += 1
                    if response.status_code == 202:
                        accepted.append(response.json()["id"])
                    else:
                        try:
                            _assert_outage_answer(response)
                        except (AssertionError, ValueError, KeyError):
                            unexpected.append(f"{response.status_code} {response.text[:200]}")
                    time.sleep(0.02)

        clients = [threading.Thread(target=submit) for _ in range(3)]
        for client in clients:
            client.start()
        try:
            _wait_until(lambda: len(accepted) >= 10, 30, "no load")
            own_redis.kill()  # everything it held is gone: queues, tasks in flight, staged logs
            time.sleep(2)
            own_redis.start()
            time.sleep(3)
        finally:
            stop.set()
            for client in clients:
                client.join()

        # A diagnosis submitted after the restart goes through: the worker consumes again.
        after = httpx.post(
            f"{base}{URL}", content=OOM_LOG.encode(), headers=_token_headers(acme_token)
        )
        assert after.status_code == 202, after.text
        accepted.append(after.json()["id"])

        def settled() -> bool:
            return not Diagnosis.objects.filter(id__in=accepted).exclude(status__in=FINAL).exists()

        _wait_until(settled, 45, "diagnoses still active")
        # The health check docker-compose runs: this worker takes tasks again.
        health = _check_worker(env, worker.command[-1], timeout=20)
    finally:
        for process in (web, beat, worker):
            process.stop()

    assert worker.output().count("Unrecoverable error") == 0
    assert health.returncode == 0, health.stderr
    assert "consumes tasks" in health.stdout
    assert Diagnosis.objects.get(id=accepted[-1]).status == "done"
    outcomes = Counter(Diagnosis.objects.filter(id__in=accepted).values_list("status", flat=True))
    assert outcomes["done"] + outcomes["failed"] == len(accepted)
    for diagnosis in Diagnosis.objects.filter(id__in=accepted, status="failed"):
        assert "lost in an outage" in diagnosis.failure_reason, diagnosis.failure_reason
        assert QuotaCharge.objects.get(reference=str(diagnosis.id)).refunded_at is not None
    assert not unexpected, unexpected[:3]
    assert set(answers) <= {202, 503}, answers
    print(f"answers {dict(answers)}, outcomes {dict(outcomes)}")


def _start_upload(port: int, token: str, size: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"POST {URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {size}\r\n\r\n".encode()
    )
    return sock


def test_a_web_process_killed_mid_upload_leaves_no_raw_log_after_the_sweep(
    own_redis, catalogue, acme_token, tmp_path
):
    env = _environment(own_redis.url)
    port = stack.free_port()
    web = stack.gunicorn(env, tmp_path / "web.log", port)
    web.start()
    store = get_store(own_redis.url)
    try:
        stack.wait_until_serving(f"http://127.0.0.1:{port}", web)
        line = f"step 1 loss 2.0 token={SECRET} host gpu-node-17\n".encode()
        part = line * (4 * 1024 * 1024 // len(line))
        sock = _start_upload(port, acme_token, size=10 * len(part))
        sock.sendall(part)  # 4 of the announced 40 MB, and then nothing
        _wait_until(lambda: any(store.keys_of(RAW)), 20, "nothing staged")
        _wait_until(
            lambda: own_redis.client().strlen(next(store.keys_of(RAW))) >= len(part) // 2,
            20,
            "the upload did not progress",
        )
        staged = next(store.keys_of(RAW))
        assert 0 < own_redis.client().ttl(staged) <= 60  # STAGING_PENDING_TTL_SECONDS
        web.kill()  # SIGKILL, master and worker: nothing runs its cleanup
        sock.close()
    finally:
        web.stop()
    assert store.exists(staged)  # left behind by the kill

    time.sleep(1.2)  # idle for STAGING_ORPHAN_IDLE_SECONDS (1 s here; OBJECT IDLETIME in seconds)
    with override_settings(STAGING_ORPHAN_IDLE_SECONDS=1):
        sweep = services.sweep_staging()

    assert sweep.orphans == 1
    assert not list(store.keys_of(RAW))
    assert not list(store.keys_of(MASKED))
    for key in own_redis.client().scan_iter(count=1000):
        value = own_redis.client().dump(key) or b""
        assert SECRET.encode() not in value, key


class ThrowawayDatabase:
    """A throwaway PostgreSQL holding a copy of the test database, which the test may stop."""

    def __init__(self, directory: Path) -> None:
        from tests.with_services import ThrowawayPostgres

        self.server = ThrowawayPostgres(directory)

    def start_with_copy(self) -> str:
        import pgserver

        self.url = self.server.start()
        source = connection.settings_dict
        bin_dir = Path(pgserver.__file__).parent / "pginstall" / "bin"
        source_options = [
            *("-h", source["HOST"] or "127.0.0.1", "-p", str(source["PORT"] or 5432)),
            *("-U", source["USER"] or "postgres", "-d", source["NAME"]),
        ]
        dump = subprocess.run(
            [str(bin_dir / "pg_dump"), "--no-owner", "--no-privileges", *source_options],
            capture_output=True,
            check=True,
            env={"PGPASSWORD": source.get("PASSWORD") or ""},
        )
        subprocess.run(
            [str(bin_dir / "psql"), "-q", "-v", "ON_ERROR_STOP=0", self.url],
            input=dump.stdout,
            capture_output=True,
            check=True,
        )
        return self.url

    def stop(self) -> None:
        self.server.stop()

    def start_again(self) -> None:
        """The same data directory and port: PostgreSQL coming back after a restart."""
        port = self.url.rsplit(":", 1)[1].split("/")[0]
        options = f"-h 127.0.0.1 -p {port} -k {self.server.data} -c fsync=off"
        self.server._run("pg_ctl", ["-w", "-l", str(self.server.log), "-o", options, "start"])
        self.server.started = True


def _statuses(database_url: str, ids: list[str]) -> dict[str, str]:
    import psycopg

    with psycopg.connect(database_url) as db:
        rows = db.execute(
            "SELECT id::text, status FROM diagnosis_diagnosis WHERE id::text = ANY(%s)", (ids,)
        ).fetchall()
    return dict(rows)


def test_postgresql_away_for_seconds_is_503_and_nothing_stays_in_a_stage(
    own_redis, catalogue, acme_token, tmp_path
):
    directory = Path(tempfile.mkdtemp(prefix="rootcause-pg-blip-"))
    database = ThrowawayDatabase(directory)
    try:
        database_url = database.start_with_copy()
    except Exception as exc:  # pragma: no cover - no pgserver binaries on this platform
        database.stop()
        pytest.skip(f"no throwaway PostgreSQL: {exc}")
    env = _environment(
        own_redis.url,
        DATABASE_URL=database_url,
        # Longer than the stage and the outage: the retry must resume its own lease, not wait
        # for it to expire (it would wait past the end of the test).
        DIAGNOSIS_STAGE_LEASE_SECONDS="120",
        CELERY_VISIBILITY_TIMEOUT="300",
        # Connections kept across requests and tasks, as in production (the other tests'
        # processes share the run's database and close theirs): the restart leaves every one of
        # them dead, and each process must replace its own (config/celery.py, CONN_HEALTH_CHECKS).
        DB_CONN_MAX_AGE="60",
    )
    worker = stack.worker(env, tmp_path / "worker.log", concurrency=2)
    beat = stack.beat(env, tmp_path / "beat.log", tmp_path)
    port = stack.free_port()
    web = stack.gunicorn(env, tmp_path / "web.log", port)
    base = f"http://127.0.0.1:{port}"
    headers = _token_headers(acme_token)
    accepted: list[str] = []
    try:
        for process in (worker, beat, web):
            process.start()
        stack.wait_until_serving(base, web)
        wait_for_output(worker, " ready.")
        with httpx.Client(base_url=base, timeout=30) as client:
            # A big log, so that PostgreSQL goes away while a stage holds it.
            big = (("step 1 loss 2.0 host gpu-node-17 user janedoe\n" * 40_000) + OOM_LOG).encode()
            response = client.post(URL, content=big, headers=headers)
            assert response.status_code == 202, response.text
            accepted.append(response.json()["id"])
            _wait_until(
                lambda: _statuses(database_url, accepted)[accepted[0]] != "queued",
                30,
                "no stage started",
            )
            database.stop()
            _assert_outage_answer(client.post(URL, content=OOM_LOG.encode(), headers=headers))
            _assert_outage_answer(client.get(URL, headers=headers))
            time.sleep(4)
            database.start_again()

            _wait_until(
                lambda: client.get(URL, headers=headers).status_code == 200, 20, "no recovery"
            )
            response = client.post(URL, content=OOM_LOG.encode(), headers=headers)
            assert response.status_code == 202
            accepted.append(response.json()["id"])
            _wait_until(
                lambda: set(_statuses(database_url, accepted).values()) <= set(FINAL),
                45,
                "a diagnosis stayed in a stage",
            )
        assert set(_statuses(database_url, accepted).values()) == {"done"}
        # The outage did hit the stage, which retried rather than failed.
        assert "OperationalError, retrying" in worker.output()
    finally:
        for process in (web, beat, worker):
            process.stop()
        database.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _check_worker(env: dict[str, str], name: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """The worker's docker-compose health check, as docker runs it."""
    return subprocess.run(
        [sys.executable, "manage.py", "check_worker", "--worker", name, "--timeout", str(timeout)],
        cwd=stack.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_worker_health_check_fails_when_no_worker_consumes(own_redis, tmp_path):
    # Its success is checked on a live worker after a Redis restart, above.
    result = _check_worker(_environment(own_redis.url), "celery@nobody-consumes", timeout=3)

    assert result.returncode != 0
    assert "did not run a task in 3 s" in result.stderr
