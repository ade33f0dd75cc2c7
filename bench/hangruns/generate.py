"""Run every hang scenario's real gloo job on CPU and keep the bundle it leaves (`bench/hangruns`).

One scenario = one job of 4 to 16 ranks, forked from this process after `import torch` (so a rank
starts in milliseconds instead of re-importing torch), running program.py with one fault on one
rank. When the scenario's moment comes (the stall established, the crash happened, enough steps
done, or the run finished) the collector takes what an on-call engineer would: each rank's
flight-recorder buffer (gloo records it in torch 2.13), `py-spy dump` of every live rank (text
and/or --json), faulthandler stacks (SIGUSR1, into the rank's log), and the logs. The label comes
from the scenario, never from the analyser. One job at a time.

    .venv-realruns/bin/python bench/hangruns/generate.py [--only SUBSTRING] [--list] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The flight recorder reads its buffer size when torch.distributed initialises: set it first.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

import program

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
PYSPY = Path(sys.executable).parent / "py-spy"

STALLS = ("dataloader", "dataloader-worker", "file-read", "lock", "input", "sleep", "eval")
MISMATCHES = ("mismatch-size", "mismatch-dtype", "mismatch-op", "skip-branch")
CRASHES = {
    "sigkill": "host-oom-killed",
    "cpu-oom": "host-oom-killed",
    "shape-error": "shape-mismatch",
}


@dataclass
class Scenario:
    name: str
    verdict: str  # the diagnosis class the scenario produces; "none" for a healthy job
    culprits: list[int]
    fault: str
    world: int
    at: int
    moment: str  # stall | freeze | mismatch | crash | progress | finish
    fr: str  # json | pickle | none
    pyspy: str  # text | json | both | none
    faulthandler: bool
    log_format: str
    ddp: bool
    let_timeout: bool
    settle: float
    delay: float = 0.0
    extra: int = 3
    min_steps: int = 6
    how: str = ""
    dropped_dumps: list[int] = field(default_factory=list)


def sealed(name: str) -> bool:
    """About a third of the scenarios, fixed by the name alone (as bench/realruns does)."""
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 == 0


def pick(rng: random.Random, weighted: dict[str, float]) -> str:
    return rng.choices(list(weighted), weights=list(weighted.values()))[0]


def scenario(fault: str, i: int) -> Scenario:
    name = f"{fault}__{i}"
    rng = random.Random(name)
    world = rng.choice([4, 4, 4, 4, 5, 5, 6, 6, 8, 8, 8, 12, 16])
    if i >= 1:
        # The machine these ran on was shared and loaded (load average 20-25 on 2 cores): a
        # 12- or 16-rank job took over a minute, so only the first round has them.
        world = min(world, 8)
    culprit = rng.randrange(world)
    if fault == "eval":
        culprit = 0 if i % 3 else rng.randrange(world)
    fr = pick(rng, {"json": 0.45, "pickle": 0.35, "none": 0.2})
    pyspy = pick(rng, {"text": 0.4, "json": 0.35, "both": 0.1, "none": 0.15})
    fh = rng.random() < 0.5
    if fr == "none" and pyspy == "none":
        pyspy = "text"
    common: dict[str, object] = dict(
        world=world,
        at=rng.randint(2, 4),
        fr=fr,
        pyspy=pyspy,
        faulthandler=fh,
        log_format=rng.choice(["torch", "stamp", "plain"]),
        ddp=rng.random() < 0.3,
        let_timeout=rng.random() < 0.3,
        settle=round(rng.uniform(1.0, 1.6), 2),
    )
    if fault in STALLS:
        return Scenario(
            name,
            "rank-stalled-before-collective",
            [culprit],
            fault,
            moment="stall",
            how=f"rank {culprit} blocks ({fault}) before the step's collectives",
            **common,
        )
    if fault in MISMATCHES:
        common["ddp"] = False if fault == "skip-branch" else common["ddp"]
        return Scenario(
            name,
            "collective-mismatch",
            [culprit],
            fault,
            moment="mismatch",
            extra=rng.randint(1, 7),
            how=f"rank {culprit} issues a different metric collective ({fault})",
            **common,
        )
    if fault in CRASHES:
        return Scenario(
            name,
            CRASHES[fault],
            [culprit],
            fault,
            moment="crash",
            how=f"rank {culprit} dies ({fault}); the others wait on it",
            **common,
        )
    if fault == "freeze":
        return Scenario(
            name,
            "hang-inside-collective",
            [culprit],
            fault,
            moment="freeze",
            how=f"rank {culprit} enters the gradient all_reduce first and is frozen "
            "with SIGSTOP inside it; the others join and wait",
            **common,
        )
    if fault == "straggler":
        common["let_timeout"] = False
        return Scenario(
            name,
            "straggler-rank",
            [culprit],
            fault,
            moment="progress",
            delay=round(rng.uniform(0.25, 0.6), 2),
            min_steps=rng.randint(3, 5),
            how=f"rank {culprit} sleeps every step; the job progresses",
            **common,
        )
    common["let_timeout"] = False
    if fault == "finish":
        return Scenario(name, "none", [], fault, moment="finish", how="the job finishes", **common)
    delay = round(rng.uniform(0.1, 0.3), 2) if fault == "slow-all" else 0.15
    return Scenario(
        name,
        "none",
        [],
        fault,
        moment="progress",
        delay=delay,
        min_steps=rng.randint(3, 5),
        how=f"healthy ({fault}): every rank progresses; taken mid-run",
        **common,
    )


def all_scenarios() -> list[Scenario]:
    counts = {f: 8 for f in STALLS}
    counts.update({"mismatch-size": 6, "mismatch-dtype": 7, "mismatch-op": 6, "skip-branch": 6})
    counts.update({"sigkill": 6, "cpu-oom": 6, "shape-error": 8, "freeze": 14, "straggler": 15})
    counts.update({"finish": 12, "slow-all": 8, "jitter": 7})
    return [scenario(f, i) for f, n in counts.items() for i in range(n)]


def read_marks(outdir: str, world: int) -> list[str]:
    out = []
    for r in range(world):
        try:
            out.append(Path(outdir, f"{program.STEP_FILE}.{r}").read_text())
        except OSError:
            out.append("")
    return out


def alive(pids: dict[int, int], codes: dict[int, int]) -> list[int]:
    for rank, pid in pids.items():
        if rank in codes:
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            codes[rank] = os.waitstatus_to_exitcode(status)
    return [r for r in pids if r not in codes]


def collect(
    sc: Scenario, outdir: str, pids: dict[int, int], codes: dict[int, int], launcher: list[str]
) -> None:
    live = alive(pids, codes)
    # When the bundle was taken: the only clock that says how long a pending collective has
    # waited (a flight-recorder dump carries no time of its own).
    now = time.time_ns()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now / 1e9))
    launcher.append(f"bundle collected at {stamp}Z (epoch_ns {now})")
    if sc.fr != "none":
        Path(outdir, ".dump-request").touch()
        deadline = time.time() + 4
        while time.time() < deadline and not all(
            Path(outdir, f".dumped.{r}").exists() for r in live
        ):
            time.sleep(0.05)
    formats = {"text": [[]], "json": [["--json"]], "both": [[], ["--json"]], "none": []}[sc.pyspy]
    for rank in live:
        for extra in formats:
            suffix = "json" if extra else "txt"
            cmd = [str(PYSPY), "dump", "--pid", str(pids[rank]), *extra]
            if sc.moment == "freeze" and rank == sc.culprits[0]:
                cmd.append("--nonblocking")  # ptrace cannot pause a stopped process again
            try:
                res = subprocess.run(cmd, capture_output=True, timeout=8)
            except subprocess.TimeoutExpired:
                launcher.append(f"py-spy dump of rank {rank} timed out")
                continue
            if res.returncode == 0 and res.stdout:
                Path(outdir, f"pyspy_rank{rank}.{suffix}").write_bytes(res.stdout)
            else:
                launcher.append(f"py-spy dump of rank {rank} failed: {res.stderr.decode()[:200]}")
    if sc.faulthandler:
        for rank in live:
            if sc.moment == "freeze" and rank == sc.culprits[0]:
                continue  # a stopped process cannot run its handler
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids[rank], signal.SIGUSR1)
        time.sleep(0.4)
    # The request is over: a rank that did not answer it in time gave no dump. (Until
    # 2026-12-07 the file stayed, and the SIGCONT before the final SIGKILL let a frozen rank's
    # dump thread wake and write a dump no collector could have had: see README.)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(outdir, ".dump-request"))


def run(sc: Scenario, workdir: str) -> tuple[bool, str, dict[str, bytes]]:
    outdir = tempfile.mkdtemp(prefix=f"{sc.name}-", dir=workdir)
    fifo = os.path.join(outdir, ".shard-0007.bin")
    os.mkfifo(fifo)
    steps = 30 if sc.moment == "progress" else 10
    timeout = (20 if sc.let_timeout else 120) if sc.moment != "progress" else 60
    pids: dict[int, int] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    launcher = [f"launching {sc.world} ranks (gloo, torch {torch.__version__})"]
    for rank in range(sc.world):
        opts = dict(
            rank=rank,
            world=sc.world,
            outdir=outdir,
            log_path=os.path.join(outdir, f"rank{rank}.log"),
            culprit=rank in sc.culprits,
            fault=sc.fault,
            at=sc.at,
            delay=sc.delay,
            extra=sc.extra,
            fifo=fifo,
            fr=sc.fr,
            faulthandler=sc.faulthandler,
            log_format=sc.log_format,
            ddp=sc.ddp,
            timeout=timeout,
            steps=steps,
            batch=8,
            dim=16,
            log_every=1,
            dump_at_end=True,
            dump_on_error=True,
        )
        if sc.fault == "freeze" and rank not in sc.culprits:
            opts["fault"], opts["delay"] = "late-at", 1.0
        pid = os.fork()
        if pid == 0:
            program.run_rank(opts)
        pids[rank] = pid
        launcher.append(f"rank {rank}: pid {pid}")
    codes: dict[int, int] = {}
    start = time.time()
    culprit = sc.culprits[0] if sc.culprits else None
    ok, why = False, "timed out waiting for the scenario's moment"
    fault_seen: float | None = None
    while time.time() - start < 90:
        live = alive(pids, codes)
        marks = read_marks(outdir, sc.world)
        if culprit is not None and fault_seen is None and Path(outdir, f"fault.{culprit}").exists():
            fault_seen = time.time()
            if sc.moment == "freeze":
                time.sleep(0.3)
                # Said nowhere in the bundle: the launcher's log is evidence, and a line naming
                # the frozen rank would hand the analyser its label.
                os.kill(pids[culprit], signal.SIGSTOP)
        settled = fault_seen is not None and (time.time() - fault_seen >= sc.settle or not live)
        if sc.moment in ("stall", "freeze", "mismatch") and settled:
            ok = sc.moment == "mismatch" or culprit in live
            why = "culprit exited before the stall was established" if not ok else ""
            break
        if sc.moment == "crash" and culprit is not None and culprit in codes:
            time.sleep(min(sc.settle, 1.0))
            ok, why = codes[culprit] != 0, "culprit exited 0"
            break
        if sc.moment == "progress":
            steps_done = [int(m.split()[1]) if m.startswith("step") else -1 for m in marks]
            if min(steps_done) >= sc.min_steps:
                ok, why = len(live) == sc.world, "a rank exited during a healthy run"
                break
        if sc.moment == "finish" and not live:
            ok = all(c == 0 for c in codes.values())
            why = f"exit codes {codes}"
            break
        if sc.moment != "finish" and not live and sc.moment != "crash":
            why = f"every rank exited before the moment: {codes}"
            break
        time.sleep(0.05)
    if ok:
        collect(sc, outdir, pids, codes, launcher)
    # After the collection: let the gloo timeout fire (its errors are in the logs) or stop the job.
    if ok and sc.let_timeout and sc.moment in ("stall", "freeze", "mismatch"):
        deadline = time.time() + timeout + 6
        while time.time() < deadline and len(alive(pids, codes)) > (
            1 if sc.moment in ("stall", "freeze") else 0
        ):
            time.sleep(0.2)
    for rank in alive(pids, codes):
        # SIGKILL ends a stopped process as it is: no SIGCONT, which would let it run first.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pids[rank], signal.SIGKILL)
    for rank, pid in pids.items():
        if rank not in codes:
            _, status = os.waitpid(pid, 0)
            codes[rank] = os.waitstatus_to_exitcode(status)
    for rank in sorted(codes):
        launcher.append(f"rank {rank} (pid {pids[rank]}) exit code {codes[rank]}")
    Path(outdir, "launcher.log").write_text("\n".join(launcher) + "\n")
    files = {
        p.name: p.read_bytes()
        for p in sorted(Path(outdir).iterdir())
        if p.is_file()
        and not p.name.startswith(".")
        and not p.name.startswith((program.STEP_FILE, "fault."))
    }
    if ok and sc.moment == "finish":
        ok = all(b"training finished" in files.get(f"rank{r}.log", b"") for r in range(sc.world))
        why = why or "no 'training finished'"
    shutil.rmtree(outdir, ignore_errors=True)
    return ok, why, files


def pack(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_labels(labels: dict[str, dict[str, dict[str, object]]]) -> None:
    for part, rows in labels.items():
        with open(CORPUS / part / "labels.jsonl", "w") as f:
            for name in sorted(rows):
                f.write(json.dumps(rows[name], sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep bundles not run this time")
    ap.add_argument("--resume", action="store_true", help="with --keep: skip bundles kept")
    args = ap.parse_args()
    chosen = [s for s in all_scenarios() if args.only in s.name]
    # Interleave the kinds, so a generation cut short still covers every verdict.
    chosen.sort(key=lambda s: (int(s.name.rsplit("__", 1)[1]), s.name))
    if args.list:
        for s in chosen:
            print(("sealed " if sealed(s.name) else "dev    ") + s.name, s.verdict, s.culprits)
        return
    labels: dict[str, dict[str, dict[str, object]]] = {"dev": {}, "sealed": {}}
    for part in labels:
        (CORPUS / part).mkdir(parents=True, exist_ok=True)
        path = CORPUS / part / "labels.jsonl"
        if args.keep and path.exists():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                labels[part][row["name"]] = row
    if args.resume:
        kept = set(labels["dev"]) | set(labels["sealed"])
        chosen = [s for s in chosen if s.name not in kept]
    workdir = tempfile.mkdtemp(prefix="hangruns-")
    dropped = []
    t0 = time.time()
    for n, sc in enumerate(chosen, 1):
        part = "sealed" if sealed(sc.name) else "dev"
        s0 = time.time()
        ok, why, files = run(sc, workdir)
        if not ok:
            dropped.append(f"{sc.name}: {why}")
            print(f"[{n}/{len(chosen)}] DROPPED {sc.name}: {why}", flush=True)
            continue
        (CORPUS / part / f"{sc.name}.tar.gz").write_bytes(pack(files))
        row = asdict(sc) | {"torch": torch.__version__, "files": sorted(files), "part": part}
        labels[part][sc.name] = row
        print(
            f"[{n}/{len(chosen)}] {sc.name} {part} {time.time() - s0:.1f}s {len(files)} files",
            flush=True,
        )
        write_labels(labels)  # after each bundle, so an interrupted generation keeps its work
    write_labels(labels)
    shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"{len(chosen) - len(dropped)} bundles in {time.time() - t0:.0f}s; dropped {len(dropped)}"
    )
    for d in dropped:
        print("  dropped", d)


if __name__ == "__main__":
    main()
