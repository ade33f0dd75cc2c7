"""CPU time a submission costs the web process, measured in process: the `make loadtest` intake's
request (a 50 KB training log, raw `text/plain`, an API token) through Django's whole handler,
middleware included, with the Celery message published to Redis, N times in a loop.

CPU milliseconds per submission depend much less on what else the machine runs than the
submissions a second of `make loadtest` do, so this is the figure to compare before and after a
change to the intake (run both in the same minutes, alternated). `--profile` prints where the time
goes (cProfile, by cumulative time).

    python -m tests.with_services -- python -m bench.intake_cpu [--n 300] [--rounds 3] [--profile]

It makes a database of its own (dropped at the end) and its own Redis key prefix (deleted).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Iterator

from bench.in_process import configure, own_database, submitter

# The burst limit per organisation stays as configured.
PREFIX = configure("intake-cpu")


# What --compare leaves out, one at a time, to see what each costs (never in the service itself).
LEFT_OUT = ("csp", "slots", "cleaning")


@contextlib.contextmanager
def _left_out(name: str) -> Iterator[None]:
    from unittest import mock

    from django.conf import settings
    from django.test import override_settings

    if name == "csp":
        middleware = [m for m in settings.MIDDLEWARE if m != "plumbing.csp.CSPMiddleware"]
        with override_settings(MIDDLEWARE=middleware):
            yield
    elif name == "slots":
        from plumbing.concurrency import Slot

        class NoSlot(Slot):
            """A slot of no bound: nothing sent to Redis for it, always free."""

            def __init__(self, *_: object) -> None:
                super().__init__([], hold_seconds=0, what="uploads")

            def redis_keys(self, default: object) -> list[str]:
                return []

            def lua_args(self) -> list[str | int]:
                return []

            def take(self) -> None:
                self.full = 0

        with mock.patch("diagnosis.api.upload_slot", NoSlot):
            yield
    elif name == "cleaning":
        with mock.patch("diagnosis.services.submission.one_line", lambda text: text):
            yield
    else:
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="submissions a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also with each of csp, slots, cleaning left out, alternated: what each costs",
    )
    args = parser.parse_args(argv)

    with own_database("intake_cpu", PREFIX):
        submit = submitter()

        def cpu_ms(count: int) -> float:
            started = time.process_time()
            submit(count)
            return (time.process_time() - started) / count * 1000

        submit(30)  # warm: imports, first connections, caches
        variants = ["all", *LEFT_OUT] if args.compare else ["all"]
        figures: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name in variants:
                with _left_out(name):
                    figures[name].append(cpu_ms(args.n))
        for name, per_submission in figures.items():
            label = "CPU per submission" if name == "all" else f"  without {name}"
            print(
                f"{label}: median {statistics.median(per_submission):.2f} ms "
                f"(rounds: {', '.join(f'{ms:.2f}' for ms in per_submission)}; {args.n} each)"
            )
        if args.profile:
            # CPU time, not the wall clock: waits on PostgreSQL and Redis are not this process's.
            profile = cProfile.Profile(time.process_time)
            profile.enable()
            submit(args.n)
            profile.disable()
            stats = pstats.Stats(profile, stream=sys.stdout)
            stats.sort_stats("cumulative").print_stats(70)
            stats.sort_stats("tottime").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
