"""`rootcause run -- COMMAND`: the job as a child, its output passed through, watched.

stdout and stderr stay two pipes and are copied to ours as the bytes arrive (one thread that
waits on both with a selector and reads whatever is there, no line buffering), so colours, `\\r`
bars and the order within each stream are unchanged. The job runs in a process group of its own
(so a terminal's Ctrl-C reaches us, and we decide what reaches it); SIGINT and SIGTERM are
forwarded to its tree.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from types import FrameType

from rootcause.live import procs
from rootcause.live.monitor import Monitor
from rootcause.live.session import Output, Session

READ_SIZE = 1 << 20
# A chatty job (50,000 lines a second, every stderr line its own write) would otherwise be read
# in many small pieces, each a wake-up, a few Python calls and two system calls: after a round of
# short reads the pump waits this long for more (output reaches the terminal at most this much
# later, about what a person starts to notice), and the pipes are made big enough
# (F_SETPIPE_SZ) that the job never blocks on them meanwhile. Each round costs about 0.2 ms of
# CPU whatever it reads; at 0.05 s, rounds were a third of the pump's CPU on bench/live.py's job.
SETTLE = 0.1
PIPE_SIZE = 1 << 20
# How often the main loop looks for a due diagnosis, a stall or the job's end: a diagnosis is
# at most this much later (it waits DEBOUNCE for the output to settle anyway).
TICK = 0.25
SOURCE = "job"
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux


@dataclass
class RunOptions:
    kill_on_failure: bool = False
    kill_on_hang: bool = False
    grace: float = 5.0  # seconds between SIGTERM and SIGKILL


class Job:
    """The child process and the threads that copy its output."""

    def __init__(self, argv: list[str], env: dict[str, str], monitor: Monitor, output: Output):
        self.monitor = monitor
        self.output = output
        monitor.add_source(SOURCE)
        self.proc = subprocess.Popen(  # noqa: S603  (the user's own command, as given)
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, process_group=0
        )
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        streams = {self.proc.stdout.fileno(): (1, "out"), self.proc.stderr.fileno(): (2, "err")}
        self.pump = threading.Thread(target=self._pump, args=(streams,), daemon=True)
        self.pump.start()
        self.killed_by_us = False

    def _pump(self, streams: dict[int, tuple[int, str]]) -> None:
        """Copies both pipes until both are closed: one thread, one wake-up for both streams."""
        selector = selectors.DefaultSelector()
        for source_fd in streams:
            with contextlib.suppress(OSError):  # the default size when the system refuses
                fcntl.fcntl(source_fd, F_SETPIPE_SZ, PIPE_SIZE)
            selector.register(source_fd, selectors.EVENT_READ)
        # one buffer for every read: a fresh 1 MiB bytes object per os.read is memory the
        # kernel maps and faults in each time, which cost more than the copy out of it
        buffer = bytearray(READ_SIZE)
        view = memoryview(buffer)
        with selector:
            while selector.get_map():
                busy = False
                for key, _ in selector.select():
                    size = self._copy(key.fd, streams[key.fd], buffer, view)
                    if size == 0:
                        selector.unregister(key.fd)
                    busy = busy or size == READ_SIZE  # a full read: more may be waiting
                if not busy:
                    time.sleep(SETTLE)

    def _copy(
        self, source_fd: int, target: tuple[int, str], buffer: bytearray, view: memoryview
    ) -> int:
        """One read of a ready pipe, written out and fed to the monitor; 0 at its end."""
        try:
            size = os.readv(source_fd, [buffer])
        except InterruptedError:
            return -1
        except OSError:
            return 0
        if size:
            data = bytes(view[:size])
            self.output.write(target[0], data)
            self.monitor.feed(SOURCE, target[1], data)
        return size

    @property
    def pid(self) -> int:
        return self.proc.pid

    def forward(self, sig: int) -> None:
        if sig == signal.SIGKILL:
            procs.signal_tree(self.pid, sig)
        else:
            procs.signal_group(self.pid, sig)

    def kill(self, grace: float) -> None:
        """SIGTERM to the job's tree, SIGKILL after `grace` seconds to what is left."""
        self.killed_by_us = True
        tree = [self.pid, *procs.descendants(self.pid)]
        procs.signal_group(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            self.proc.poll()
            if not procs.alive(tree):
                return
            time.sleep(0.1)
        procs.signal_tree(self.pid, signal.SIGKILL)
        for pid in procs.alive(tree):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def finish(self) -> int:
        """The exit status as a shell reports it: the code, or 128 + the signal."""
        code = self.proc.wait()
        # a grandchild may hold the pipes open after the job's own process ended
        self.pump.join(timeout=2.0)
        return 128 - code if code < 0 else code


def run_job(
    argv: list[str],
    *,
    env: dict[str, str],
    session: Session,
    options: RunOptions,
) -> int:
    """Runs the command to its end; returns its exit status (see Job.finish)."""
    monitor = session.monitor
    try:
        job = Job(argv, env, monitor, session.output)
    except OSError as exc:
        session.output.report(f"rootcause: cannot run {argv[0]!r}: {exc.strerror or exc}")
        return 127 if isinstance(exc, FileNotFoundError) else 126
    signals = {"count": 0}

    def forward(sig: int, frame: FrameType | None) -> None:
        signals["count"] += 1
        # a second Ctrl-C: the user means it
        job.forward(signal.SIGKILL if signals["count"] >= 2 else sig)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        killing = False
        while job.proc.poll() is None:
            time.sleep(TICK)
            if session.check(running=True) and options.kill_on_failure and not killing:
                killing = True
                session.output.report("rootcause: --kill-on-failure: ending the job")
                job.kill(options.grace)
            if monitor.stalled():
                session.stall(root_pid=job.pid, env=env, idle=monitor.stall_after)
                if options.kill_on_hang and not killing:
                    killing = True
                    session.output.report("rootcause: --kill-on-hang: ending the job")
                    job.kill(options.grace)
        status = job.finish()
        session.check(running=False)
        if session.bundle is not None:
            # a watchdog that fired after the stall (and killed the job) wrote its dumps now
            from rootcause.live.bundle import add_flight_recorder, write_readme

            add_flight_recorder(session.bundle, env)
            write_readme(session.bundle)
        # a job we ended for a stall already has its report; its exit is ours, not a failure
        session.finish(failed=status != 0 and not (job.killed_by_us and session.bundle is not None))
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
