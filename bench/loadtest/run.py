"""`make loadtest`: a live real-mode stack on this machine under locust, and what it sustained.

The run starts everything it measures and stops it again, also when interrupted:
- its own redis-server on a free port (no persistence, as in production), never the shared one;
- a fresh PostgreSQL database on LOADTEST_POSTGRES (default postgres://postgres@127.0.0.1:5432),
  named after the run, migrated, the catalogue loaded; dropped at the end;
- gunicorn (gunicorn.conf.py when the checkout has one), a Celery worker with 4 processes, beat;
- LOADTEST_ORGS organisations, each with an API token, on the free tier with its daily allowance
  raised (TIER_FREE_DAILY_DIAGNOSES) so that the quota is checked and charged but never runs
  out; the per-address burst limit is raised too, since every locust user comes from 127.0.0.1
  (the per-organisation one stays as configured).

Two phases, each a headless locust run posting 50 KB generated logs (user and host names, IPs,
e-mail addresses and tokens planted in them):
1. end to end: up to LOADTEST_RATE submissions a second for LOADTEST_SECONDS, held back while
   more than LOADTEST_BACKLOG messages wait in the Celery queue (so the rate is one the workers
   sustain, not a queue growing for the whole run), then up to LOADTEST_DRAIN_SECONDS for the
   last ones to finish. Submit->done is the time from the start of
   the request (the client's clock) to the row's finished_at (the worker's, same machine). Every
   accepted id must be in the database, done or failed, with nothing left in Redis for it;
2. intake alone: the worker stopped, as many submissions as the API takes for
   LOADTEST_INTAKE_SECONDS (quota-checked, staged, queued); every accepted id must be a queued row
   with its raw log staged.
Exit status 1 when a submission was lost or left unfinished, an answer was a 5xx or nothing was
accepted; 2 when the stack did not come up; 3 (goals.GOAL_MISSED) when nothing of that happened
but a goal was missed (bench/loadtest/goals.py), the figures printed beside the reference work
measured in the same run.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from bench.in_process import service_settings
from bench.loadtest.cpu import CpuMeter, processor_name, reference_milliseconds
from bench.loadtest.goals import (
    GOAL_E2E_RATE,
    GOAL_INTAKE,
    GOAL_MISSED,
    GOAL_P99,
    Figures,
    check_goals,
    describe,
    goals_met,
)

# What locustfile.py writes (accepted and refused submissions) plus the window: JSON read by its
# known keys across this module, not a JSON union that each read would have to cast.
Results = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN = Path(PYTHON).parent

RATE = float(os.environ.get("LOADTEST_RATE", "90"))
SECONDS = int(os.environ.get("LOADTEST_SECONDS", "30"))

DRAIN_SECONDS = int(os.environ.get("LOADTEST_DRAIN_SECONDS", "40"))
INTAKE_SECONDS = int(os.environ.get("LOADTEST_INTAKE_SECONDS", "15"))
INTAKE_USERS = int(os.environ.get("LOADTEST_INTAKE_USERS", "24"))
ORGS = int(os.environ.get("LOADTEST_ORGS", "40"))
WORKER_CONCURRENCY = int(os.environ.get("LOADTEST_WORKER_CONCURRENCY", "4"))
# Submissions wait while more messages than this wait for a worker (bench/loadtest/locustfile.py):
# by default two per worker process, enough that none idles, so that submit->done measures the
# stack rather than the depth of a queue the load generator chose to build.
BACKLOG = int(os.environ.get("LOADTEST_BACKLOG", str(2 * WORKER_CONCURRENCY)))
LOG_BYTES = int(os.environ.get("LOADTEST_LOG_BYTES", str(50 * 1024)))
POSTGRES = os.environ.get("LOADTEST_POSTGRES", "postgres://postgres@127.0.0.1:5432")
# gunicorn's flags when the checkout has no gunicorn.conf.py: threads, so that a slow client
# does not hold a whole process, and about as many processes as cores.
GUNICORN_FLAGS = os.environ.get(
    "LOADTEST_GUNICORN_FLAGS", "--workers 3 --worker-class gthread --threads 4"
).split()


def say(message: str) -> None:
    print(f"loadtest: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


@dataclass
class Stack:
    """The processes, the database and the directory of one run; `close` undoes all of them."""

    tmp: Path
    database: str
    redis_port: int
    web_port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    database_created: bool = False

    @property
    def database_url(self) -> str:
        return f"{POSTGRES}/{self.database}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            service_settings("loadtest"),
            DATABASE_URL=self.database_url,
            REDIS_URL=self.redis_url,
            REDIS_KEY_PREFIX="rootcause:",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            PYTHONUNBUFFERED="1",
        )
        return env

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it
        # Its own session: its process group (gunicorn's and Celery's children included) is
        # ended as one, and a Ctrl-C reaches only this script, which stops things in order.
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=self._env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.processes[name] = process
        return process

    def stop(self, name: str, timeout: float = 30) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        # Children that outlived their parent (a prefork child mid-task) share its group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.tmp / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        for name in reversed(list(self.processes)):
            self.stop(name, timeout=15)
        if self.database_created:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            try:
                import psycopg

                with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                self.database_created = False
            except Exception as exc:
                say(f"could not drop database {self.database}: {exc}")
        shutil.rmtree(self.tmp, ignore_errors=True)

    _env: dict[str, str] = field(default_factory=dict)


def wait_until(
    what: str, check: Callable[[], object], timeout: float, stack: Stack, name: str
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        process = stack.processes.get(name)
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up:\n{stack.tail(name)}")


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own stack
        return bool(response.status == 200)


def start_redis(stack: Stack) -> None:
    stack.start(
        "redis",
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(stack.redis_port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(stack.tmp),
        ],
    )

    def answers() -> bool:
        import redis

        return bool(redis.Redis(port=stack.redis_port).ping())

    wait_until("redis-server", answers, 20, stack, "redis")


def prepare_database(stack: Stack) -> list[str]:
    """The database, migrated and with the catalogue; the organisations and their tokens."""
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{stack.database}"')
    stack.database_created = True
    os.environ.update(stack._env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts.services import create_api_token, create_organization

    call_command("migrate", "--noinput", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    tokens = []
    for i in range(ORGS):
        owner = get_user_model().objects.create_user(f"loadtest-{i}@example.com")
        organization = create_organization(name=f"loadtest {i}", owner=owner)
        _, secret = create_api_token(organization=organization, created_by=owner, name="load")
        tokens.append(secret)
    return tokens


def web_shape() -> str:
    """gunicorn's processes x threads as this run starts it (gunicorn.conf.py reads them from the
    environment and the cores), for the report: runs are compared by it."""
    config = ROOT / "gunicorn.conf.py"
    if not config.exists():
        return " ".join(GUNICORN_FLAGS)
    values = runpy.run_path(str(config))
    return f"{values['workers']} x {values['threads']} threads"


def web_settled(pid: int, timeout: float = 90) -> None:
    """Wait (at most `timeout` seconds) until every web process of the gunicorn master `pid` has
    booted and idles: /healthz answers as soon as one has, and the others' imports (seconds of
    CPU each without compiled bytecode, PYTHONDONTWRITEBYTECODE) would otherwise be a phase's."""
    master = psutil.Process(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = {p.pid: sum(p.cpu_times()[:2]) for p in master.children()}
        time.sleep(1)
        after = {p.pid: sum(p.cpu_times()[:2]) for p in master.children()}
        if (
            before
            and before.keys() == after.keys()
            and all(after[p] - before[p] < 0.05 for p in after)
        ):
            return


def start_web(stack: Stack) -> None:
    config = ROOT / "gunicorn.conf.py"
    flags = ["-c", str(config)] if config.exists() else GUNICORN_FLAGS
    stack.start(
        "gunicorn",
        [
            str(BIN / "gunicorn"),
            *flags,
            "--bind",
            f"127.0.0.1:{stack.web_port}",
            "config.wsgi:application",
        ],
    )
    wait_until("gunicorn", lambda: http_ok(f"{stack.base_url}/healthz"), 60, stack, "gunicorn")
    web_settled(stack.processes["gunicorn"].pid)


def start_workers(stack: Stack) -> None:
    stack.start(
        "worker",
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            f"--concurrency={WORKER_CONCURRENCY}",
            "--loglevel=WARNING",
            "-n",
            f"loadtest-{os.getpid()}@%h",
        ],
    )
    stack.start(
        "beat",
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel=WARNING",
            "-s",
            str(stack.tmp / "beat-schedule"),
        ],
    )
    from config.celery import app

    wait_until("the Celery worker", lambda: app.control.ping(timeout=1), 90, stack, "worker")


def locust(
    stack: Stack,
    name: str,
    *,
    users: int,
    seconds: int,
    user_rate: float,
    tokens: list[str],
    backlog: int = 0,
) -> Results:
    results = stack.tmp / f"{name}.json"
    env = dict(stack._env)
    env.update(
        LOADTEST_TOKENS=json.dumps(tokens),
        LOADTEST_RESULTS=str(results),
        LOADTEST_USER_RATE=str(user_rate),
        LOADTEST_LOG_BYTES=str(LOG_BYTES),
        LOADTEST_BACKLOG=str(backlog),
        LOADTEST_REDIS_PORT=str(stack.redis_port),
    )
    process = subprocess.Popen(
        [
            str(BIN / "locust"),
            "-f",
            str(Path(__file__).with_name("locustfile.py")),
            "--headless",
            "--host",
            stack.base_url,
            "--users",
            str(users),
            "--spawn-rate",
            str(users),
            "--run-time",
            f"{seconds}s",
            "--stop-timeout",
            "30",
            "--only-summary",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=open(stack.tmp / f"{name}.log", "ab"),  # noqa: SIM115 - the child holds it
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stack.processes[name] = process
    started = time.time()
    process.wait(timeout=seconds + 120)
    ended = time.time()
    stack.processes.pop(name, None)
    if not results.exists():
        raise RuntimeError(f"locust wrote no results:\n{stack.tail(name)}")
    data: Results = json.loads(results.read_text())
    # The window is the submissions' own, from the first request's start to the last answer:
    # locust's start-up (generating its logs) and stop are not the server's time.
    if data["accepted"]:
        started = min(start for _, start, _ in data["accepted"])
        ended = max(start + took for _, start, took in data["accepted"])
    data["started"], data["ended"] = started, ended
    return data


# The load generator's part in the CPU lines, whichever phase ("e2e", "intake") started it.
LOCUST, PHASES = "locust", ("e2e", "intake")


def cpu_roots(stack: Stack) -> dict[str, list[int]]:
    """The stack's processes by part, for CpuMeter; PostgreSQL's are the backends serving the
    run's database (the server's own processes are shared with whatever else runs here). The
    phase's locust process, named after its phase in the stack, is "locust" here."""
    roots = {
        LOCUST if name in PHASES else name: [process.pid]
        for name, process in stack.processes.items()
    }
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", [stack.database]
            ).fetchall()
        roots["postgres"] = [pid for (pid,) in rows]
    return roots


@dataclass
class Rows:
    final: dict[str, tuple[str, float | None, str]]  # id -> (status, finished_at, reason)
    active: dict[str, str]  # id -> status


def rows_of(ids: list[str]) -> Rows:
    from diagnosis.models import Diagnosis
    from diagnosis.pipeline.stage import FINAL_STATUSES

    final: dict[str, tuple[str, float | None, str]] = {}
    active: dict[str, str] = {}
    for start in range(0, len(ids), 2000):
        for pk, status, finished, reason in Diagnosis.objects.filter(
            id__in=ids[start : start + 2000]
        ).values_list("id", "status", "finished_at", "failure_reason"):
            if status in FINAL_STATUSES:
                final[str(pk)] = (status, finished.timestamp() if finished else None, reason)
            else:
                active[str(pk)] = status
    return Rows(final, active)


def staged_keys(stack: Stack) -> dict[str, set[str]]:
    import redis

    client = redis.Redis(port=stack.redis_port)
    found: dict[str, set[str]] = {"raw": set(), "masked": set()}
    for kind in found:
        for key in client.scan_iter(match=f"rootcause:{kind}:*", count=1000):
            found[kind].add(key.decode().rsplit(":", 1)[1])
    return found


def server_errors(refused: dict[str, int]) -> int:
    """Answers 5xx: a run with any is not a clean one, whatever else it measured."""
    return sum(count for status, count in refused.items() if status.startswith("5"))


@dataclass
class EndToEnd:
    submitted: int  # answered 202
    unanswered: int  # rows whose request the client saw fail (cut off at the end of the run)
    seconds: float
    done: int
    failed: int
    lost: list[str]
    unfinished: dict[str, str]
    leftover_keys: int
    latencies: list[float]
    answer_times: list[float]  # seconds from the start of each accepted request to its 202
    refused: dict[str, int]
    reasons: dict[str, int]
    last_finished_after: float
    cpu: str  # CPU per submission by part of the stack, the drain included

    @property
    def ok(self) -> bool:
        return (
            self.submitted > 0
            and not self.lost
            and not self.unfinished
            and not self.leftover_keys
            and not server_errors(self.refused)
        )


def run_end_to_end(stack: Stack, tokens: list[str]) -> EndToEnd:
    users = max(1, min(64, round(RATE / 2)))
    say(f"end to end: {RATE:g} submissions/s from {users} users for {SECONDS} s")
    # The drain is the phase's too: the workers' CPU after locust stops is these submissions'.
    with CpuMeter(lambda: cpu_roots(stack)) as meter:
        data = locust(
            stack,
            "e2e",
            users=users,
            seconds=SECONDS,
            user_rate=RATE / users,
            tokens=tokens,
            backlog=BACKLOG,
        )
        accepted = {pk: started for pk, started, _ in data["accepted"]}
        # A request cut off as locust stops may have been taken all the same: every row counts.
        from diagnosis.models import Diagnosis

        unanswered = {str(pk) for pk in Diagnosis.objects.values_list("id", flat=True)} - set(
            accepted
        )
        ids = [*accepted, *unanswered]
        deadline = time.monotonic() + DRAIN_SECONDS
        while True:
            rows = rows_of(ids)
            if not rows.active or time.monotonic() > deadline:
                break
            time.sleep(1)
    lost = [pk for pk in accepted if pk not in rows.final and pk not in rows.active]
    done = {pk: v for pk, v in rows.final.items() if v[0] == "done"}
    reasons: dict[str, int] = {}
    for status, _, reason in rows.final.values():
        if status == "failed":
            reasons[reason] = reasons.get(reason, 0) + 1
    keys = staged_keys(stack)
    leftover = len((keys["raw"] | keys["masked"]) & set(rows.final))
    latencies = [
        finished - accepted[pk]
        for pk, (_, finished, _) in done.items()
        if finished and pk in accepted
    ]
    last = max((v[1] or 0 for v in rows.final.values()), default=data["ended"])
    return EndToEnd(
        submitted=len(accepted),
        unanswered=len(unanswered),
        seconds=data["ended"] - data["started"],
        done=len(done),
        failed=len(rows.final) - len(done),
        lost=lost,
        unfinished=rows.active,
        leftover_keys=leftover,
        latencies=latencies,
        answer_times=[took for _, _, took in data["accepted"]],
        refused=data["refused"],
        reasons=reasons,
        last_finished_after=last - data["started"],
        cpu=meter.describe(len(data["accepted"]), generator=LOCUST),
    )


@dataclass
class Intake:
    accepted: int
    seconds: float
    refused: dict[str, int]
    missing_rows: int
    missing_raw: int
    p50: float
    p99: float
    cpu: str

    @property
    def ok(self) -> bool:
        return (
            self.accepted > 0
            and not self.missing_rows
            and not self.missing_raw
            and not server_errors(self.refused)
        )


def run_intake(stack: Stack, tokens: list[str]) -> Intake:
    say(f"intake alone (worker stopped): {INTAKE_USERS} users for {INTAKE_SECONDS} s")
    with CpuMeter(lambda: cpu_roots(stack)) as meter:
        data = locust(
            stack, "intake", users=INTAKE_USERS, seconds=INTAKE_SECONDS, user_rate=0, tokens=tokens
        )
    ids = [pk for pk, _, _ in data["accepted"]]
    rows = rows_of(ids)
    queued = {pk for pk, status in rows.active.items() if status == "queued"}
    raw = staged_keys(stack)["raw"]
    answer_times = [seconds for _, _, seconds in data["accepted"]]
    return Intake(
        accepted=len(ids),
        seconds=data["ended"] - data["started"],
        refused=data["refused"],
        missing_rows=len(set(ids) - queued),
        missing_raw=len(set(ids) - raw),
        p50=percentile(answer_times, 0.5),
        p99=percentile(answer_times, 0.99),
        cpu=meter.describe(len(data["accepted"]), generator=LOCUST),
    )


def figures_of(e2e: EndToEnd, intake: Intake | None, reference: tuple[float, float]) -> Figures:
    """The figures the goals are checked on, as the report prints them."""
    finished = e2e.last_finished_after
    return Figures(
        e2e_rate=e2e.done / finished if finished > 0 else 0.0,
        p99=percentile(e2e.latencies, 0.99),
        intake_rate=intake.accepted / intake.seconds if intake and intake.seconds else None,
        reference_ms=reference,
    )


def report(e2e: EndToEnd, intake: Intake | None, reference: tuple[float, float]) -> str:
    """The figures; `reference` is the machine's reference work (ms) before and after the phases."""
    rate = e2e.submitted / e2e.seconds if e2e.seconds else 0.0
    p50, p99 = percentile(e2e.latencies, 0.5), percentile(e2e.latencies, 0.99)
    lines = [
        "",
        f"== make loadtest: {os.cpu_count()} cores, {LOG_BYTES // 1024} KB logs, "
        f"gunicorn {web_shape()}, {WORKER_CONCURRENCY} worker processes ==",
        f"machine: {processor_name()}; one core's reference work (bench/loadtest/cpu.py,"
        f" lower is faster) {reference[0]:.1f} ms before the phases, {reference[1]:.1f} ms after",
        f"end to end, offered up to {RATE:g}/s for {SECONDS} s, held back while more than"
        f" {BACKLOG} messages waited for a worker:",
        f"  accepted   {e2e.submitted} in {e2e.seconds:.1f} s = {rate:.1f} submissions/s",
        f"  done       {e2e.done}, the last {e2e.last_finished_after:.1f} s after the start"
        f" = {e2e.done / e2e.last_finished_after if e2e.last_finished_after > 0 else 0:.1f}"
        f" diagnoses/s   (goal >= {GOAL_E2E_RATE:g}/s)",
        f"  submit->done p50 {p50:.2f} s, p99 {p99:.2f} s, max "
        f"{max(e2e.latencies, default=float('nan')):.2f} s   (goal p99 < {GOAL_P99:g} s)",
        f"  of which the answer (202) p50 {percentile(e2e.answer_times, 0.5) * 1000:.0f} ms,"
        f" p99 {percentile(e2e.answer_times, 0.99) * 1000:.0f} ms",
        f"  submitted {e2e.submitted + e2e.unanswered} = done {e2e.done} + failed {e2e.failed}"
        f" + unfinished {len(e2e.unfinished)} + lost {len(e2e.lost)}",
    ]
    lines.append(f"  CPU: {e2e.cpu}")
    if e2e.unanswered:
        lines.append(
            f"  ({e2e.unanswered} of them taken by the server without the client seeing the 202,"
            " e.g. cut off as locust stopped; counted, no latency)"
        )
    if e2e.refused:
        lines.append(f"  refused answers: {e2e.refused}")
    if e2e.reasons:
        lines.append(f"  failure reasons: {e2e.reasons}")
    if e2e.leftover_keys:
        lines.append(f"  staged keys left in Redis for finished diagnoses: {e2e.leftover_keys}")
    if intake is not None:
        lines += [
            f"intake alone, {INTAKE_USERS} users as fast as answered, worker stopped:",
            f"  accepted   {intake.accepted} in {intake.seconds:.1f} s = "
            f"{intake.accepted / intake.seconds:.1f} submissions/s   (goal >= {GOAL_INTAKE:g}/s)",
            f"  answer time p50 {intake.p50 * 1000:.0f} ms, p99 {intake.p99 * 1000:.0f} ms",
            f"  CPU: {intake.cpu}",
            "  every accepted id queued with its raw log staged: "
            + (
                "yes"
                if intake.ok
                else f"NO ({intake.missing_rows} rows, {intake.missing_raw} raw logs missing)"
            ),
        ]
        if intake.refused:
            lines.append(f"  refused answers: {intake.refused}")
    figures = figures_of(e2e, intake, reference)
    lines.append(describe(figures, check_goals(figures)))
    verdict = e2e.ok and (intake is None or intake.ok)
    lines.append(
        "nothing lost, nothing stuck"
        if verdict
        else "FAILED: nothing accepted, server errors, or submissions lost, unfinished or left"
        " staged (see above)"
    )
    return "\n".join(lines)


def exit_status(e2e: EndToEnd, intake: Intake | None, reference: tuple[float, float]) -> int:
    """1 when something was lost or unfinished, else GOAL_MISSED when a goal was, else 0."""
    if not (e2e.ok and (intake is None or intake.ok)):
        return 1
    return 0 if goals_met(check_goals(figures_of(e2e, intake, reference))) else GOAL_MISSED


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    run_id = f"{os.getpid()}_{secrets.token_hex(3)}"
    stack = Stack(
        tmp=Path(tempfile.mkdtemp(prefix="rootcause-loadtest-")),
        database=f"rootcause_loadtest_{run_id}",
        redis_port=free_port(),
        web_port=free_port(),
    )
    stack._env = stack.env()
    began = time.monotonic()
    try:
        try:
            say(f"redis-server on port {stack.redis_port}, database {stack.database}")
            start_redis(stack)
            tokens = prepare_database(stack)
            start_web(stack)
            start_workers(stack)
        except RuntimeError as exc:
            say(str(exc))
            return 2
        say(f"stack up in {time.monotonic() - began:.0f} s")
        reference_before = reference_milliseconds()
        e2e = run_end_to_end(stack, tokens)
        stack.stop("beat")
        stack.stop("worker")
        intake = run_intake(stack, tokens) if INTAKE_SECONDS > 0 else None
        reference = (reference_before, reference_milliseconds())
        print(report(e2e, intake, reference), flush=True)
        say(f"finished in {time.monotonic() - began:.0f} s")
        return exit_status(e2e, intake, reference)
    except (KeyboardInterrupt, Interrupted):
        say("interrupted; stopping the stack")
        return 130
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
