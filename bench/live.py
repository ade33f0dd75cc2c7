"""`rootcause run`'s cost on a chatty job: a job printing LINES_PER_SECOND lines a second to
stdout (and every 100th to stderr, and a `\\r` bar), run bare and under `rootcause run`.

Figures: the CPU time `rootcause run` spends while the job runs, as a share of the job's own
CPU time (the issue's bar: under 5 %), measured from /proc between the job's first and last
output (start-up, which a long job pays once, is reported apart); and whether stdout and stderr
came out byte for byte as the bare run's (sha256 of each).

    python -m bench.live [--seconds 10] [--lines-per-second 50000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

JOB = r"""
import os, sys, time
rate, seconds = int(sys.argv[1]), float(sys.argv[2])
batch = rate // 100  # 100 batches a second, each line its own print() as a training loop's
total = int(rate * seconds)  # the same lines every run: the outputs are compared
start = time.monotonic()
i = 0
while i < total:
    for _ in range(batch):
        print(f"[rank{i % 4}]: step {i} loss {1.0 / (1 + i):.4f} lr 3.0e-04 grad_norm 1.25 "
              "tokens/s 51234")
        if i % 100 == 0:
            print(f"[rank{i % 4}]: warning: slow batch {i}", file=sys.stderr)
        if i % 1000 == 0:
            print(f"\r{i * 100 // total:3d}%|{'#' * 10}| {i}/{total}", end="")
        i += 1
    pause = (i / rate) - (time.monotonic() - start)
    if pause > 0:
        time.sleep(pause)
sys.stdout.flush()
t = os.times()
with open(os.environ["LIVE_BENCH_CPU"], "w") as f:
    f.write(f"{t.user + t.system} {i}")
print("END-OF-JOB", flush=True)
time.sleep(1.0)  # idle, so the last sample of rootcause's CPU is taken while the job is alive
"""


def _cpu(pid: int) -> float:
    """utime + stime of one process, in seconds (its children not included)."""
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rfind(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    """One run of the job: its exit code, its output's digests and sizes, the CPU the job
    reported and, when the watcher was sampled, its CPU seconds at the job's first and last
    lines."""

    code: int
    out: str
    err: str
    sizes: dict[str, int]
    job_cpu: float
    lines: int
    samples: dict[str, float]


def run_once(argv: list[str], cpu_file: str, watch_pid: bool) -> Run:
    env = {**os.environ, "LIVE_BENCH_CPU": cpu_file, "OMP_NUM_THREADS": "1"}
    env.pop("ROOTCAUSE_URL", None)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    assert proc.stderr is not None
    digests = {"out": hashlib.sha256(), "err": hashlib.sha256()}
    sizes = {"out": 0, "err": 0}
    samples: dict[str, float] = {}

    def read(stream: object, name: str) -> None:
        tail = b""
        while True:
            data = os.read(stream.fileno(), 1 << 16)  # type: ignore[attr-defined]
            if not data:
                return
            if watch_pid and name == "out" and "first" not in samples:
                samples["first"] = _cpu(proc.pid)
                samples["first_at"] = time.monotonic() - started
            digests[name].update(data)
            sizes[name] += len(data)
            tail = (tail + data)[-64:]
            if watch_pid and name == "out" and b"END-OF-JOB\n" in tail and "last" not in samples:
                samples["last"] = _cpu(proc.pid)

    readers = [
        threading.Thread(target=read, args=(proc.stdout, "out")),
        threading.Thread(target=read, args=(proc.stderr, "err")),
    ]
    for reader in readers:
        reader.start()
    code = proc.wait()
    for reader in readers:
        reader.join()
    job_cpu, lines = Path(cpu_file).read_text().split()
    return Run(
        code=code,
        out=digests["out"].hexdigest(),
        err=digests["err"].hexdigest(),
        sizes=sizes,
        job_cpu=float(job_cpu),
        lines=int(lines),
        samples=samples,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--lines-per-second", type=int, default=50_000)
    args = parser.parse_args(argv)
    rootcause = str(Path(sys.executable).parent / "rootcause")
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "chatty.py"
        job.write_text(JOB)
        cpu_file = str(Path(tmp) / "cpu")
        command = [sys.executable, str(job), str(args.lines_per_second), str(args.seconds)]
        bare = run_once(command, cpu_file, watch_pid=False)
        watched = run_once(
            [rootcause, "run", "--offline", "--stall-after", "0", "--", *command],
            cpu_file,
            watch_pid=True,
        )
    ours = watched.samples["last"] - watched.samples["first"]
    job_cpu = watched.job_cpu
    same = (bare.out, bare.err) == (watched.out, watched.err)
    # stderr under `run` gets our report only when the job fails or a failure is found; neither
    sizes = watched.sizes
    print(
        f"job: {watched.lines:,} lines in {args.seconds:g} s "
        f"({args.lines_per_second:,}/s asked), {sizes['out']:,} bytes stdout, "
        f"{sizes['err']:,} bytes stderr; its own CPU {job_cpu:.2f} s"
    )
    print(
        f"rootcause run while the job ran: {ours:.2f} s CPU = {100 * ours / job_cpu:.1f} % of "
        f"the job's (bar: < 5 %); start-up before the job's first line "
        f"{watched.samples['first']:.2f} s CPU, once"
    )
    print(f"output byte for byte as the bare run's (stdout and stderr, sha256): {same}")
    print(f"exit codes: bare {bare.code}, under run {watched.code}")
    return 0 if same and ours / job_cpu < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
