"""The load of `make loadtest`: API clients posting 50 KB training logs with personal data in them.

Run by `bench/loadtest/run.py`, which starts the stack and passes, through the environment:
LOADTEST_TOKENS (a JSON list of API tokens, one per organisation), LOADTEST_RESULTS (where each
accepted submission is written: its id, when the request started and how long it took),
LOADTEST_USER_RATE (submissions per second per user; 0 or unset: as fast as answers come),
LOADTEST_LOG_BYTES, and LOADTEST_BACKLOG with LOADTEST_REDIS_PORT: while more than that many
messages wait in the Celery queue, users hold back their next submission, so that the rate
measured end to end is one the workers sustain rather than a queue that grows for the whole run
(0: never hold back). Only ids and timings leave this process; the runner reads the rest from
the database.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import cast

import redis
from locust import FastHttpUser, constant, constant_throughput, events, task
from locust.env import Environment

from bench.genlog import generate_log

TOKENS: list[str] = json.loads(os.environ.get("LOADTEST_TOKENS", "[]"))
RESULTS = os.environ.get("LOADTEST_RESULTS", "")
USER_RATE = float(os.environ.get("LOADTEST_USER_RATE", "0") or 0)
LOG_BYTES = int(os.environ.get("LOADTEST_LOG_BYTES", str(50 * 1024)))
BACKLOG = int(os.environ.get("LOADTEST_BACKLOG", "0") or 0)
QUEUE = redis.Redis(port=int(os.environ.get("LOADTEST_REDIS_PORT", "6379")))
QUEUE_KEY = os.environ.get("LOADTEST_QUEUE_KEY", "rootcause:celery")

# Distinct logs (each generated log plants its own user and host names, IPs and secrets), made
# once: generating them is not the server's work.
LOGS = [b"".join(generate_log(LOG_BYTES, seed=seed)) for seed in range(32)]

# (diagnosis id, wall-clock start of the request, seconds to the 202)
accepted: list[tuple[str, float, float]] = []
refused: dict[str, int] = {}


_queue_length = (0.0, 0)  # (when it was read, the length)


def _queued() -> int:
    """The Celery queue's length, read at most every 20 ms for all users together: the load
    generator shares the machine with the service, and its own polling is not the service's."""
    global _queue_length
    read_at, length = _queue_length
    now = time.monotonic()
    if now - read_at > 0.02:
        length = cast(int, QUEUE.llen(QUEUE_KEY))
        _queue_length = (now, length)
    return length


class Submitter(FastHttpUser):
    wait_time = constant_throughput(USER_RATE) if USER_RATE > 0 else constant(0)
    # A slow answer is measured, not cut short: a submission the client gave up on would be
    # neither accepted nor refused.
    network_timeout = 120.0
    connection_timeout = 30.0

    @task
    def submit(self) -> None:
        while BACKLOG and _queued() > BACKLOG:
            time.sleep(0.05)  # gevent's: the other users go on
        token = random.choice(TOKENS)
        started = time.time()
        with self.client.post(
            "/api/v1/diagnoses",
            # bytes go through as the body; locust's annotation names str and dict only
            data=random.choice(LOGS),  # type: ignore[arg-type]
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "text/plain",
                "X-Rootcause-Filename": "train.log",
            },
            name="POST /api/v1/diagnoses",
            catch_response=True,
        ) as response:
            if response.status_code == 202:
                accepted.append((response.json()["id"], started, time.time() - started))
                response.success()
            else:
                key = str(response.status_code)
                refused[key] = refused.get(key, 0) + 1
                response.failure(f"HTTP {response.status_code}")


@events.quitting.add_listener
def _write_results(environment: Environment, **_: object) -> None:
    if RESULTS:
        with open(RESULTS, "w") as out:
            json.dump({"accepted": accepted, "refused": refused}, out)
