"""The `run` and `watch` commands, added to the CLI's typer app by `register`.

Only typer is imported here: the CLI package imports this module, and the engine, masker and
HTTP client load when a command runs (they would make `rootcause --help` slow, and importing
them from here would be an import cycle through `rootcause.cli`).
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rootcause.live.session import Session

RUN_HELP = """Run a training command and diagnose it while it runs.

The command's stdout and stderr pass through unchanged (bytes, not lines); rootcause keeps the
last few MiB and, at the first error line that decides a failure (a root-cause error on any
rank, not a collateral timeout), prints the diagnosis on stderr while the job still runs, and
posts it when a server is configured (ROOTCAUSE_URL, ROOTCAUSE_TOKEN; `--offline`: nothing
leaves the machine). With no progress for `--stall-after` seconds it collects a hang bundle
(py-spy stacks of the job's Python processes, the flight recorder's dumps, each rank's last
lines) and diagnoses it. The exit code is the command's unless `--exit-code diagnosis`.

Example: `rootcause run --kill-on-failure -- torchrun --nproc-per-node 8 train.py`"""

WATCH_HELP = """Follow log files another process writes, and diagnose the job while it runs.

FILE is followed from its start (rotation and truncation handled); DIR is searched for log files
(*.log, *.out, *.err, *.txt) again and again, so that files appearing later are followed too
(torchrun's `--log-dir`). The same first-failure and stall reports as `run`, without process
access. Stops on Ctrl-C, or after `--until-idle` seconds without new output; exit code 1 when a
failure was diagnosed, 0 otherwise (docs/ci.md's table)."""


class ExitCodeFrom(StrEnum):
    command = "command"
    diagnosis = "diagnosis"


Server = Annotated[
    str,
    typer.Option("--server", "--url", envvar="ROOTCAUSE_URL", help="post diagnoses to it"),
]
Token = Annotated[str, typer.Option(envvar="ROOTCAUSE_TOKEN", help="an API token")]
Offline = Annotated[
    bool, typer.Option("--offline", help="never post, even with a server configured")
]
StallAfter = Annotated[
    float,
    typer.Option(
        min=0, help="seconds without new output or a moving step counter that are a stall; 0: off"
    ),
]
Wait = Annotated[float, typer.Option(min=0, help="seconds to wait for a posted diagnosis")]
Key = Annotated[str, typer.Option("--idempotency-key", help="e.g. the job id")]
Labels = Annotated[list[str] | None, typer.Option("--label", help="a label (repeatable)")]


def _session(
    *, name: str, stall_after: float, server: str, token: str, offline: bool, wait: float,
    key: str, labels: list[str] | None, bundle_dir: str = "",
) -> Session:  # fmt: skip
    from rootcause.engine import get_engine
    from rootcause.live.monitor import Monitor
    from rootcause.live.session import Output, Session, Settings

    monitor = Monitor(engine=get_engine(), name=name, stall_after=stall_after)
    settings = Settings(
        server="" if offline else server.rstrip("/"),
        token=token,
        wait=wait,
        key=key,
        labels=labels or [],
        bundle_dir=bundle_dir,
    )
    if settings.server:
        from rootcause.cli.client import Service
        from rootcause.cli.errors import CliError, ExitCode

        try:
            Service(settings.server, token)
        except CliError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(ExitCode.USAGE) from None
    return Session(monitor=monitor, output=Output(), settings=settings)


def run(
    command: Annotated[list[str], typer.Argument(help="the command, after --")],
    stall_after: StallAfter = 300.0,
    kill_on_failure: Annotated[
        bool, typer.Option("--kill-on-failure", help="end the job once a failure is diagnosed")
    ] = False,
    kill_on_hang: Annotated[
        bool, typer.Option("--kill-on-hang", help="end the job once its hang bundle is taken")
    ] = False,
    kill_grace: Annotated[
        float, typer.Option(min=0, help="seconds between SIGTERM and SIGKILL")
    ] = 5.0,
    no_flight_recorder: Annotated[
        bool,
        typer.Option("--no-flight-recorder", help="do not arm torch's flight recorder"),
    ] = False,
    bundle_dir: Annotated[
        str, typer.Option(help="where a hang bundle goes (default ./rootcause-hang-<time>-<pid>)")
    ] = "",
    exit_code: Annotated[
        ExitCodeFrom,
        typer.Option(help="the command's exit code, or the CLI's table of docs/ci.md"),
    ] = ExitCodeFrom.command,
    server: Server = "",
    token: Token = "",
    offline: Offline = False,
    wait: Wait = 300,
    idempotency_key: Key = "",
    labels: Labels = None,
) -> None:
    from rootcause.live.bundle import arm_flight_recorder
    from rootcause.live.runner import RunOptions, run_job

    if not command:
        typer.echo("error: give the command after --", err=True)
        raise typer.Exit(2)
    session = _session(
        name=" ".join(command)[:200],
        stall_after=stall_after,
        server=server,
        token=token,
        offline=offline,
        wait=wait,
        key=idempotency_key,
        labels=labels,
        bundle_dir=bundle_dir,
    )
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="rootcause-fr-") as recorder:
        if not no_flight_recorder:
            env = arm_flight_recorder(env, Path(recorder))
        status = run_job(
            command,
            env=env,
            session=session,
            options=RunOptions(
                kill_on_failure=kill_on_failure, kill_on_hang=kill_on_hang, grace=kill_grace
            ),
        )
    if exit_code is ExitCodeFrom.diagnosis:
        raise typer.Exit(int(session.exit_code()))
    raise typer.Exit(status)


def watch(
    paths: Annotated[list[str], typer.Argument(help="log files or directories")],
    stall_after: StallAfter = 300.0,
    until_idle: Annotated[
        float, typer.Option(min=0, help="stop after this many seconds without new output; 0: never")
    ] = 0.0,
    poll: Annotated[float, typer.Option(min=0.05, help="seconds between reads")] = 0.5,
    server: Server = "",
    token: Token = "",
    offline: Offline = False,
    wait: Wait = 300,
    idempotency_key: Key = "",
    labels: Labels = None,
) -> None:
    from rootcause.live.follow import Follower

    session = _session(
        name=",".join(paths)[:200],
        stall_after=stall_after,
        server=server,
        token=token,
        offline=offline,
        wait=wait,
        key=idempotency_key,
        labels=labels,
    )
    follower = Follower(paths, session.monitor)
    stopped: list[int] = []

    def stop(sig: int, frame: FrameType | None) -> None:
        stopped.append(sig)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stopped:
            follower.poll()
            for note in follower.notes:
                session.output.report(f"rootcause: {note}")
            follower.notes.clear()
            session.check(running=True)
            if session.monitor.stalled():
                session.stall(root_pid=None, env={}, idle=session.monitor.stall_after)
            if until_idle and session.monitor.idle_for() >= until_idle:
                break
            time.sleep(poll)
        follower.poll()
        session.check(running=False)
        session.finish(failed=False)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    raise typer.Exit(int(session.exit_code()))


def register(app: typer.Typer) -> None:
    """Adds `run` and `watch` to the CLI's app."""
    app.command(
        help=RUN_HELP,
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(run)
    app.command(help=WATCH_HELP)(watch)
