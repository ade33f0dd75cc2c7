"""CPU time a diagnosis costs the Celery worker, measured in process, with what the library's
masking (`rootcause.masking.mask_log`) and matching (`Engine.diagnose`) take counted apart: the
rest is the service's own work per diagnosis (taking the message and acknowledging it, the stage
claims and completions in SQL, the leases and their heartbeat, the staged log in Redis, the
result written, the alerts hooks, the metrics).

The `make loadtest` intake's submissions (a 50 KB training log, raw, 40 organisations' API
tokens) are made through Django's handler in the main thread; a real Celery worker (the solo pool,
one task at a time) runs in threads of this process and takes their messages from Redis. The
figure is the CPU of every thread but the main one (psutil), per diagnosis, once the worker is
warm; masking and matching are timed inside their calls (thread CPU). These per-diagnosis
milliseconds depend much less on what else the machine runs than diagnoses a second do: compare
before and after a change in the same minutes, alternated.

    python -m tests.with_services -- python -m bench.worker_cpu [--n 100] [--rounds 3] [--profile]

`--profile` prints where the worker's thread spends its time from the first measured task on
(cProfile, thread CPU time): the task bodies and Celery's taking and acknowledging of messages.
It makes a database of its own (dropped at the end) and its own Redis key prefix (deleted).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator

ORGANIZATIONS = 40
PREFIX = f"rootcause-worker-cpu-{uuid.uuid4().hex[:8]}:"
os.environ.update(
    DJANGO_SETTINGS_MODULE="config.settings",
    REDIS_KEY_PREFIX=PREFIX,
    DEBUG="0",
    SECRET_KEY=f"worker-cpu-{uuid.uuid4().hex}",
    ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
    SECURE_SSL_REDIRECT="0",
    LOG_LEVEL="WARNING",
    TIER_FREE_DAILY_DIAGNOSES="100000000",
    THROTTLE_SUBMISSIONS_PER_ADDRESS="1000000/second",
    THROTTLE_SUBMISSIONS_PER_ORGANIZATION="1000000/second",
    CONCURRENT_UPLOADS_PER_ADDRESS="1000",
    CONCURRENT_UPLOADS_PER_TOKEN="1000",  # noqa: S106 - a count, not a secret
)


class _Timed:
    """Thread CPU seconds spent inside the wrapped library calls."""

    def __init__(self) -> None:
        self.masking = 0.0
        self.matching = 0.0

    def generator(
        self, function: Callable[..., Iterator[object]]
    ) -> Callable[..., Iterator[object]]:
        def timed(*args: object, **kwargs: object) -> Iterator[object]:
            inner = function(*args, **kwargs)
            while True:
                started = time.thread_time()
                try:
                    item = next(inner)
                except StopIteration:
                    self.masking += time.thread_time() - started
                    return
                self.masking += time.thread_time() - started
                yield item

        return timed

    def call(self, function: Callable[..., object]) -> Callable[..., object]:
        def timed(*args: object, **kwargs: object) -> object:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.matching += time.thread_time() - started

        return timed


def _others_cpu() -> float:
    """CPU seconds of every thread of this process but the main one."""
    import psutil

    main = threading.main_thread().native_id
    return sum(t.user_time + t.system_time for t in psutil.Process().threads() if t.id != main)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="diagnoses a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from unittest import mock

    from celery.contrib.testing.worker import start_worker
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from accounts.services import create_api_token, create_organization
    from bench.genlog import generate_log
    from config.celery import app
    from diagnosis.models import Diagnosis
    from diagnosis.pipeline import loop, runners
    from rootcause.engine import Engine
    from workers import tasks  # noqa: F401 - registers the tasks the worker runs

    setup_test_environment()
    connection.settings_dict["TEST"]["NAME"] = f"worker_cpu_{uuid.uuid4().hex[:12]}"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    app.conf.task_always_eager = False
    timed = _Timed()
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    run_stages: Callable[..., None] = loop.run_stages

    profiling = threading.Event()

    def profiled(*a: object, **k: object) -> None:
        # From the first task of the measured rounds on, everything the worker's thread does:
        # the task bodies and, between them, Celery taking and acknowledging the messages.
        if profile is not None and profiling.is_set() and not getattr(profile, "on", False):
            profile.on = True  # type: ignore[attr-defined]
            profile.enable()
        run_stages(*a, **k)

    patches: list[mock._patch[object]] = [
        mock.patch.object(runners, "mask_log", timed.generator(runners.mask_log)),
        mock.patch.object(Engine, "diagnose", timed.call(Engine.diagnose)),
    ]
    if profile is not None:
        patches.append(mock.patch("workers.tasks.run_stages", profiled))
    try:
        tokens = []
        for i in range(ORGANIZATIONS):
            owner = get_user_model().objects.create_user(
                f"load{i}", f"load{i}@acme.example", "pw-load-123"
            )
            organization = create_organization(name=f"Load {i}", owner=owner)
            tokens.append(
                create_api_token(organization=organization, created_by=owner, name="l")[1]
            )
        logs = [b"".join(generate_log(50 * 1024, seed=seed)) for seed in range(32)]
        client = Client()

        def submit(count: int) -> None:
            for i in range(count):
                response = client.post(
                    "/api/v1/diagnoses",
                    logs[i % len(logs)],
                    content_type="text/plain",
                    HTTP_AUTHORIZATION=f"Bearer {tokens[i % len(tokens)]}",
                    HTTP_X_ROOTCAUSE_FILENAME="train.log",
                )
                if response.status_code != 202:
                    raise SystemExit(f"{response.status_code}: {response.content[:300]!r}")

        def finished() -> None:
            deadline = time.monotonic() + 600
            while Diagnosis.objects.exclude(status__in=["done", "failed"]).exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the worker did not finish in 10 minutes")
                time.sleep(0.25)
            failed = Diagnosis.objects.filter(status="failed").count()
            if failed:
                raise SystemExit(f"{failed} diagnoses failed")

        for patch in patches:
            patch.start()
        rows: list[tuple[float, float, float]] = []
        with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False):
            submit(20)  # warm: imports, the analyzer, the engine, first connections
            finished()
            profiling.set()
            for _ in range(args.rounds):
                # The worker takes the messages as they come; the main thread's submitting is
                # not counted.
                timed.masking = timed.matching = 0.0
                started = _others_cpu()
                submit(args.n)
                finished()
                spent = _others_cpu() - started
                rows.append((spent, timed.masking, timed.matching))
        for patch in patches:
            patch.stop()

        def ms(values: list[float]) -> str:
            each = [v / args.n * 1000 for v in values]
            rounds = ", ".join(f"{v:.2f}" for v in each)
            return f"median {statistics.median(each):.2f} ms ({rounds})"

        total = [r[0] for r in rows]
        print(f"worker CPU per diagnosis: {ms(total)}; {args.n} a round")
        print(f"  masking (mask_log):      {ms([r[1] for r in rows])}")
        print(f"  matching (diagnose):     {ms([r[2] for r in rows])}")
        print(f"  without masking:         {ms([r[0] - r[1] for r in rows])}")
        print(f"  the service's own:       {ms([r[0] - r[1] - r[2] for r in rows])}")
        if profile is not None:
            if os.environ.get("WORKER_CPU_PROFILE_FILE"):
                profile.dump_stats(os.environ["WORKER_CPU_PROFILE_FILE"])
            stats = pstats.Stats(profile, stream=sys.stdout)
            stats.sort_stats("cumulative").print_stats(80)
            stats.sort_stats("tottime").print_stats(40)
    finally:
        # The worker's threads kept connections of their own to the database.
        with connection._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                [connection.settings_dict["NAME"]],
            )
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        import redis
        from django.conf import settings

        keys = redis.Redis.from_url(settings.REDIS_URL)
        for key in keys.scan_iter(f"{PREFIX}*"):
            keys.delete(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
