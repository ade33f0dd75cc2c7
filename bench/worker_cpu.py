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
from collections.abc import Callable, Iterator

from bench.in_process import configure, own_database, submitter

PREFIX = configure("worker-cpu", THROTTLE_SUBMISSIONS_PER_ORGANIZATION="1000000/second")


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

    with own_database("worker_cpu", PREFIX):
        from unittest import mock

        from celery.contrib.testing.worker import start_worker

        from config.celery import app
        from diagnosis.models import Diagnosis
        from diagnosis.pipeline import loop, runners
        from rootcause.engine import Engine
        from workers import tasks  # noqa: F401 - registers the tasks the worker runs

        timed = _Timed()
        profile = cProfile.Profile(time.thread_time) if args.profile else None
        run_stages: Callable[..., None] = loop.run_stages
        profiling = threading.Event()

        def profiled(*a: object, **k: object) -> None:
            # From the first task of the measured rounds on, everything the worker's thread
            # does: the task bodies and, between them, Celery taking and acknowledging messages.
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
        submit = submitter()

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
