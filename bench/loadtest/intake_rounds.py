"""What a submission costs each part of the served stack, intake alone, over several rounds:
`make loadtest`'s intake phase (gunicorn as gunicorn.conf.py starts it, its own redis-server and
database, no Celery worker) repeated, the CPU of each part a submission printed per round and as
medians. The figure to compare before and after a change to the serving layer (gunicorn's
worker, its settings), where `bench/intake_cpu.py`, in process, does not reach.

    python -m bench.loadtest.intake_rounds [--rounds 3] [--seconds 8] [--users 24]

GUNICORN_* variables (gunicorn.conf.py) shape the web processes as in `make loadtest`. The
stack is stopped and its database dropped at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.loadtest import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--users", type=int, default=run.INTAKE_USERS)
    args = parser.parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, run._interrupt)
    stack = run.Stack(
        tmp=Path(tempfile.mkdtemp(prefix="rootcause-intake-rounds-")),
        database=f"rootcause_intake_rounds_{secrets.token_hex(4)}",
        redis_port=run.free_port(),
        web_port=run.free_port(),
    )
    stack._env = stack.env()
    per_part: dict[str, list[float]] = {}
    try:
        run.start_redis(stack)
        tokens = run.prepare_database(stack)
        run.start_web(stack)
        # Warm: every web process has imported what it uses and opened its connections.
        run.locust(stack, "intake", users=args.users, seconds=3, user_rate=0, tokens=tokens)
        print(f"gunicorn {run.web_shape()}; {args.users} users, {args.seconds} s a round")
        for number in range(1, args.rounds + 1):
            with run.CpuMeter(lambda: run.cpu_roots(stack)) as meter:
                data = run.locust(
                    stack,
                    "intake",
                    users=args.users,
                    seconds=args.seconds,
                    user_rate=0,
                    tokens=tokens,
                )
            count = len(data["accepted"])
            if not count or run.server_errors(data["refused"]):
                print(f"round {number}: {count} accepted, refused {data['refused']}")
                return 1
            seconds = meter.seconds()
            for part, cpu in seconds.items():
                per_part.setdefault(part, []).append(cpu * 1000 / count)
            rate = count / (data["ended"] - data["started"])
            print(f"round {number}: {rate:.0f}/s; {meter.describe(count, generator=run.LOCUST)}")
            time.sleep(1)
        print(
            "medians, ms of CPU a submission: "
            + ", ".join(f"{part} {statistics.median(ms):.2f}" for part, ms in per_part.items())
        )
        return 0
    except (KeyboardInterrupt, run.Interrupted):
        return 130
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
