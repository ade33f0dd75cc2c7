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

    python -m tests.with_services -- python -m bench.worker_cpu [--n 100] [--rounds 3] [--split]
        [--profile] [--prefork N]

`--prefork N` runs, instead, `make loadtest`'s worker: a `celery worker --concurrency N` process
(the prefork pool, N children) taking the same submissions, and prints the CPU of its whole
process tree (the parent taking, handing out and acknowledging messages, and the children)
per diagnosis, the parent's and the children's apart; `--split` and `--profile` do not reach
into it. WORKER_CPU_ARGS adds flags to that worker's command line.

`--profile` prints where the worker's thread spends its time from the first measured task on
(cProfile, thread CPU time): the task bodies and Celery's taking and acknowledging of messages.
It makes a database of its own (dropped at the end) and its own Redis key prefix (deleted).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from unittest import mock

import psutil

from bench.in_process import configure, own_database, submitter

PREFIX = configure("worker-cpu", THROTTLE_SUBMISSIONS_PER_ORGANIZATION="1000000/second")


class _Timed:
    """Thread CPU seconds spent in wrapped calls, each counted without the wrapped calls made
    inside it (the staged write that drives the masking generator counts its Redis work only)."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}
        self._local = threading.local()

    def _enter(self) -> float:
        stack: list[float] = self._local.__dict__.setdefault("inner", [])
        stack.append(0.0)
        return time.thread_time()

    def _leave(self, name: str, started: float) -> None:
        spent = time.thread_time() - started
        stack: list[float] = self._local.inner
        inner = stack.pop()
        self.parts[name] = self.parts.get(name, 0.0) + spent - inner
        if stack:
            stack[-1] += spent

    def generator(
        self, name: str, function: Callable[..., Iterator[object]]
    ) -> Callable[..., Iterator[object]]:
        def timed(*args: object, **kwargs: object) -> Iterator[object]:
            inner = function(*args, **kwargs)
            while True:
                started = self._enter()
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    self._leave(name, started)
                yield item

        return timed

    def call(self, name: str, function: Callable[..., object]) -> Callable[..., object]:
        def timed(*args: object, **kwargs: object) -> object:
            started = self._enter()
            try:
                return function(*args, **kwargs)
            finally:
                self._leave(name, started)

        return timed


MASKING, MATCHING = "masking", "matching"


def _service_parts(timed: _Timed) -> list[mock._patch[object]]:
    """Patches that time the service's parts of a diagnosis, each without the parts inside it."""
    from diagnosis import metrics
    from diagnosis.pipeline import lease, runners
    from diagnosis.services import lifecycle
    from diagnosis.staging import RedisStagingStore

    calls = {
        "claims (SQL)": (lifecycle, "claim_stage"),
        "completions (SQL)": (lifecycle, "complete_stage"),
        "done hooks (alerts, SQL)": (lifecycle, "diagnosis_finished"),
        "masker set-up (rules, SQL)": (runners, "_masker"),
        "engine look-up (SQL)": (runners, "current_engine"),
        "result JSON": (runners, "as_json"),
        "fix steps (remediate)": (runners, "complete_result"),
        "staged write (Redis)": (RedisStagingStore, "write"),
        "staged delete (Redis)": (RedisStagingStore, "delete"),
        "stage durations (Redis)": (metrics, "observe_stages"),
    }
    patches: list[mock._patch[object]] = [
        mock.patch.object(owner, name, timed.call(label, getattr(owner, name)))
        for label, (owner, name) in calls.items()
    ]
    patches.append(
        mock.patch.object(
            RedisStagingStore,
            "read",
            timed.generator("staged read (Redis)", RedisStagingStore.read),
        )
    )
    holding = lease.Heartbeat.holding

    @contextlib.contextmanager
    def held(self: lease.Heartbeat, claim: object) -> Iterator[object]:
        started = timed._enter()
        with holding(self, claim) as taken:  # type: ignore[arg-type]
            timed._leave("lease and heartbeat", started)
            yield taken
            started = timed._enter()
        timed._leave("lease and heartbeat", started)

    patches.append(mock.patch.object(lease.Heartbeat, "holding", held))
    return patches


def _others_cpu() -> float:
    """CPU seconds of every thread of this process but the main one."""
    main = threading.main_thread().native_id
    return sum(t.user_time + t.system_time for t in psutil.Process().threads() if t.id != main)


def _tree_cpu(process: psutil.Process) -> dict[str, float]:
    """CPU seconds of `process` (the parent) and of its live children (the prefork pool's)."""
    spent = {"parent": 0.0, "children": 0.0}
    for each in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = each.cpu_times()
            spent["parent" if each.pid == process.pid else "children"] += times.user + times.system
    return spent


@contextlib.contextmanager
def _prefork_worker(concurrency: int) -> Iterator[psutil.Process]:
    """`make loadtest`'s Celery worker (bench/loadtest/run.py) on this bench's database and
    Redis prefix, until it answers a ping and every child has taken a first task."""
    from django.db import connection

    from config.celery import app

    settings = connection.settings_dict
    user = f"{settings['USER']}:{settings['PASSWORD']}@" if settings["PASSWORD"] else ""
    user = user or (f"{settings['USER']}@" if settings["USER"] else "")
    env = dict(
        os.environ,
        DATABASE_URL=(
            f"postgres://{user}{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}"
            f"/{settings['NAME']}"
        ),
    )
    worker = subprocess.Popen(
        [
            os.path.join(os.path.dirname(sys.executable), "celery"),
            "-A",
            "config",
            "worker",
            f"--concurrency={concurrency}",
            *os.environ.get("WORKER_CPU_ARGS", "").split(),
            "--loglevel=WARNING",
            "-n",
            f"worker-cpu-{os.getpid()}@%h",
        ],
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not app.control.ping(timeout=1):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the Celery worker did not come up")
        yield psutil.Process(worker.pid)
    finally:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="diagnoses a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--split", action="store_true", help="the service's own CPU by part (thread CPU)"
    )
    parser.add_argument(
        "--prefork",
        type=int,
        default=0,
        metavar="N",
        help="measure a `celery worker --concurrency N` process tree instead",
    )
    args = parser.parse_args(argv)

    with own_database("worker_cpu", PREFIX):
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
            mock.patch.object(runners, "mask_log", timed.generator(MASKING, runners.mask_log)),
            mock.patch.object(Engine, "diagnose", timed.call(MATCHING, Engine.diagnose)),
        ]
        if args.split:
            patches += _service_parts(timed)
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

        rows: list[tuple[float, dict[str, float]]] = []
        if args.prefork:
            with _prefork_worker(args.prefork) as worker:
                submit(10 * args.prefork)  # warm: every child's first diagnoses
                finished()
                for _ in range(args.rounds):
                    before = _tree_cpu(worker)
                    submit(args.n)
                    finished()
                    after = _tree_cpu(worker)
                    parts = {name: after[name] - before[name] for name in after}
                    rows.append((sum(parts.values()), parts))
        else:
            for patch in patches:
                patch.start()
            with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False):
                submit(20)  # warm: imports, the analyzer, the engine, first connections
                finished()
                profiling.set()
                for _ in range(args.rounds):
                    # The worker takes the messages as they come; the main thread's submitting
                    # is not counted.
                    timed.parts = {}
                    started = _others_cpu()
                    submit(args.n)
                    finished()
                    rows.append((_others_cpu() - started, timed.parts))
            for patch in patches:
                patch.stop()

        def ms(values: list[float]) -> str:
            each = [v / args.n * 1000 for v in values]
            rounds = ", ".join(f"{v:.2f}" for v in each)
            return f"median {statistics.median(each):.2f} ms ({rounds})"

        def part(name: str) -> list[float]:
            return [parts.get(name, 0.0) for _, parts in rows]

        total = [spent for spent, _ in rows]
        own = [spent - sum(parts.values()) for spent, parts in rows]
        if args.prefork:
            print(
                f"prefork worker ({args.prefork} children and their parent), CPU per diagnosis:"
                f" {ms(total)}; {args.n} a round"
            )
            print(f"  the parent:              {ms(part('parent'))}")
            print(f"  the children:            {ms(part('children'))}")
            return 0
        print(f"worker CPU per diagnosis: {ms(total)}; {args.n} a round")
        masking, matching = part(MASKING), part(MATCHING)
        print(f"  masking (mask_log):      {ms(masking)}")
        print(f"  matching (diagnose):     {ms(matching)}")
        print(
            f"  without masking:         {ms([t - m for t, m in zip(total, masking, strict=True)])}"
        )
        service = [t - m - g for t, m, g in zip(total, masking, matching, strict=True)]
        print(f"  the service's own:       {ms(service)}")
        if args.split:
            names = sorted({n for _, parts in rows for n in parts} - {MASKING, MATCHING})
            for name in names:
                print(f"    {name + ':':<27}{ms(part(name))}")
            print(f"    {'the rest (Celery, loop):':<27}{ms(own)}")
        if profile is not None:
            if os.environ.get("WORKER_CPU_PROFILE_FILE"):
                profile.dump_stats(os.environ["WORKER_CPU_PROFILE_FILE"])
            stats = pstats.Stats(profile, stream=sys.stdout)
            stats.sort_stats("cumulative").print_stats(80)
            stats.sort_stats("tottime").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
