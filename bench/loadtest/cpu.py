"""Where a load phase's CPU went: seconds of CPU (user + system) per part of the stack.

A background thread samples, every half second, the CPU time of each process of the stack (each
started process and its children: gunicorn's workers, the Celery worker's pool, locust) and of
the PostgreSQL backends serving the run's database; a process's share of the phase is its last
sample minus its first (zero for one born during the phase). A process that ends between two
samples loses at most half a second of its CPU, so the figures are a floor, close enough to say
which part costs what per submission.
"""

from __future__ import annotations

import contextlib
import platform
import threading
import time
from collections.abc import Callable

import psutil

# part name -> root process ids (each with its children), asked again at every sample
Roots = Callable[[], dict[str, list[int]]]


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


class CpuMeter:
    def __init__(self, roots: Roots, interval: float = 0.5) -> None:
        self._roots = roots
        self._interval = interval
        self._first: dict[int, tuple[str, float]] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._started = False
        self.machine_busy = self.wall = 0.0
        self._machine_start = (0.0, 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for part, pids in self._roots().items():
            for pid in pids:
                with contextlib.suppress(psutil.Error):
                    root = psutil.Process(pid)
                    for process in [root, *root.children(recursive=True)]:
                        with contextlib.suppress(psutil.Error):
                            seen = (part, _cpu(process))
                            # Born during the phase: from zero (its CPU is all the phase's).
                            self._first.setdefault(
                                process.pid, (part, 0.0) if self._started else seen
                            )
                            self._last[process.pid] = seen

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    @staticmethod
    def _machine() -> tuple[float, float]:
        """(busy CPU seconds of the whole machine, wall seconds) so far."""
        times = psutil.cpu_times()
        idle = times.idle + getattr(times, "iowait", 0.0)
        return sum(times) - idle, time.monotonic()

    def __enter__(self) -> CpuMeter:
        self._machine_start = self._machine()
        self._sample()
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        busy, wall = self._machine()
        self.machine_busy = busy - self._machine_start[0]
        self.wall = wall - self._machine_start[1]

    def seconds(self) -> dict[str, float]:
        """CPU seconds per part over the phase, largest first."""
        total: dict[str, float] = {}
        for pid, (part, last) in self._last.items():
            if pid in self._first:
                total[part] = total.get(part, 0.0) + last - self._first[pid][1]
        return dict(sorted(total.items(), key=lambda item: -item[1]))

    def describe(self, count: int, *, generator: str = "") -> str:
        """'gunicorn 5.1, postgres 2.0, … = 9.8 ms of CPU a submission; machine 95 % busy'.

        With `generator`, the part that is the load generator: what the rest, the stack alone,
        spends on a submission, and the rate that would fill every core with it (what the stack
        could take with the load coming from another machine)."""
        if not count:
            return "no submissions"
        seconds = self.seconds()
        parts = ", ".join(f"{part} {cpu * 1000 / count:.1f}" for part, cpu in seconds.items())
        cores = psutil.cpu_count() or 1
        described = (
            f"{parts} = {sum(seconds.values()) * 1000 / count:.1f} ms of CPU a submission;"
            f" the machine {self.machine_busy / (self.wall * cores):.0%} busy"
            f" ({self.machine_busy * 1000 / count:.1f} ms a submission)"
        )
        stack = sum(cpu for part, cpu in seconds.items() if part != generator)
        if generator and stack > 0:
            described += (
                f"\n  the stack alone (without {generator}, the load generator):"
                f" {stack * 1000 / count:.1f} ms a submission, {count * cores / stack:.0f}/s"
                f" with all {cores} cores"
            )
        return described


def reference_milliseconds(repeat: int = 5) -> float:
    """How long one core of this machine takes for a fixed piece of pure-Python work (dict and
    string operations, as a request's handling is mostly), best of `repeat`: lower is faster.

    The project's machine is a VM whose speed changes from day to day (another host, busy
    neighbours); printed beside the figures, it tells a slower stack from a slower machine."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        table: dict[str, int] = {}
        for i in range(200_000):
            key = f"k{i % 5000}"
            table[key] = table.get(key, 0) + len(key)
        best = min(best, time.process_time() - started)
    return best * 1000


def processor_name() -> str:
    """The CPU's model name (Linux), or what the platform says."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"
