"""The training program every rank of a hang scenario runs (in a child forked by generate.py).

A small real model on CPU, its gradients all-reduced over gloo by hand (or through DDP), one fault
injected on the culprit rank at one step in the way the scenario names. The function names are
what a person would write (`load_batch`, `read_shard`, `evaluate`) because they are what the
stacks show. Nothing here writes a label: the scenario decides it in generate.py.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

STEP_FILE = "progress"
# A scenario's options, the JSON generate.py writes: read by known keys of mixed types. This file
# runs in .venv-realruns, outside mypy, so a TypedDict here would be checked by nothing.
Opts = dict[str, Any]


class Shard(Dataset):  # type: ignore[type-arg]
    """Random samples; on the culprit rank one sample never arrives (a stuck data source)."""

    def __init__(
        self, n: int, dim: int, stuck_at: int | None, on_stuck: Callable[[], None] | None = None
    ) -> None:
        g = torch.Generator().manual_seed(n)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randn(n, 4, generator=g)
        self.stuck_at = stuck_at
        self.on_stuck = on_stuck

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.stuck_at is not None and i >= self.stuck_at:
            if self.on_stuck is not None:
                self.on_stuck()
            fetch_remote_sample(i)
        return self.x[i], self.y[i]


def fetch_remote_sample(i: int) -> None:
    # A remote object store that stopped answering: the read never returns.
    time.sleep(3600)


def log(opts: Opts, msg: str) -> None:
    rank = opts["rank"]
    if opts["log_format"] == "torch":
        print(f"[rank{rank}]:{msg}", flush=True)
    elif opts["log_format"] == "stamp":
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        print(f"{stamp},{int(time.time() * 1000) % 1000:03d} INFO rank={rank} {msg}", flush=True)
    else:
        print(msg, flush=True)


def mark(outdir: str, rank: int, text: str) -> None:
    # The fault has a file of its own: a DataLoader worker reaches it steps before the main
    # process, whose later step marks would overwrite it.
    name = "fault" if text.startswith("fault") else STEP_FILE
    with open(os.path.join(outdir, f"{name}.{rank}"), "w") as f:
        f.write(text)


def fr_dumper(outdir: str, rank: int, fmt: str, stop: threading.Event) -> None:
    """Write this rank's flight-recorder buffer when the collector asks (a file appears).

    A thread, because the main thread is blocked in C++ (a gloo wait, a sleep, a read) with the
    GIL released; a signal handler would run only when the main thread returns to Python.
    """
    request = os.path.join(outdir, ".dump-request")
    while not stop.is_set():
        if os.path.exists(request):
            dump_fr(outdir, rank, fmt)
            return
        time.sleep(0.05)


def dump_fr(outdir: str, rank: int, fmt: str) -> None:
    c10d = torch._C._distributed_c10d
    if fmt == "json":
        data = c10d._dump_fr_trace_json(True, True)
        name = f"fr_trace_rank{rank}.json"
    else:
        data = c10d._dump_fr_trace(True, True)
        name = f"nccl_trace_rank_{rank}"
    if isinstance(data, str):
        data = data.encode()
    tmp = os.path.join(outdir, f".{name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(outdir, name))
    open(os.path.join(outdir, f".dumped.{rank}"), "w").close()


def sync_gradients(model: torch.nn.Module, world: int) -> None:
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world


def reduce_metric(loss: torch.Tensor, opts: Opts, step: int) -> float:
    t = loss.detach().reshape(1).clone()
    if opts["culprit"] and opts["fault"] == "mismatch-size" and step == opts["at"]:
        t = torch.cat([t, torch.zeros(opts["extra"])])
    if opts["culprit"] and opts["fault"] == "mismatch-dtype" and step == opts["at"]:
        t = t.double()
    if opts["culprit"] and opts["fault"] == "mismatch-op" and step == opts["at"]:
        dist.broadcast(t, src=0)
        return float(t[0])
    dist.all_reduce(t)
    return float(t[0]) / opts["world"]


def read_shard(path: str) -> bytes:
    with open(path, "rb") as f:  # a FIFO nobody writes: open() blocks like a dead NFS mount
        return f.read()


def wait_for_checkpoint_lock(lock: threading.Lock) -> None:
    with lock:
        pass


def ask_operator() -> str:
    return input("checkpoint exists, overwrite? [y/N] ")


def evaluate(model: torch.nn.Module, seconds: float) -> float:
    # Rank-0-only evaluation that runs far longer than the others wait.
    end = time.time() + seconds
    total = 0.0
    x = torch.randn(64, model.in_features)  # type: ignore[arg-type]
    while time.time() < end:
        total += float(model(x).sum())
    return total


def retry_with_backoff() -> None:
    # A retry loop whose backoff grew without bound: the rank sleeps instead of training.
    time.sleep(3600)


def throttle(seconds: float) -> None:
    # The slow node: this rank's host is busy, every step takes longer.
    time.sleep(seconds)


def inject(opts: Opts, model: torch.nn.Module, step: int) -> None:
    """The fault of the scenario, on the culprit, before the step's collectives."""
    fault = opts["fault"]
    if fault == "straggler" and opts["culprit"]:
        throttle(opts["delay"])
        return
    if fault == "jitter":
        if (step * 7 + opts["rank"] * 3) % opts["world"] == 0:
            time.sleep(opts["delay"])
        return
    if fault == "late-at":
        # The peers of the frozen rank reach the step's collective after it has entered it.
        if step == opts["at"]:
            time.sleep(opts["delay"])
        return
    if fault == "slow-all":
        time.sleep(opts["delay"])
        return
    if not opts["culprit"] or step != opts["at"]:
        return
    mark(opts["outdir"], opts["rank"], f"fault {step}")
    if fault == "sleep":
        retry_with_backoff()
    elif fault == "file-read":
        read_shard(opts["fifo"])
    elif fault == "lock":
        lock = threading.Lock()
        holder = threading.Thread(target=lambda: (lock.acquire(), time.sleep(3600)), daemon=True)
        holder.start()
        time.sleep(0.05)
        wait_for_checkpoint_lock(lock)
    elif fault == "input":
        ask_operator()
    elif fault == "eval":
        evaluate(model, 3600)
    elif fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "shape-error":
        bad = torch.randn(8, model.in_features + 3)  # type: ignore[operator]
        model(bad)
    elif fault == "cpu-oom":
        torch.empty(1 << 46, dtype=torch.uint8)  # 64 TiB: the allocator refuses it


def train(opts: Opts) -> None:
    rank, world, outdir = opts["rank"], opts["world"], opts["outdir"]
    log(opts, f"starting rank {rank} of {world}, pid {os.getpid()}")
    dist.init_process_group(
        "gloo",
        init_method=f"file://{outdir}/.store",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=opts["timeout"]),
    )
    stop = threading.Event()
    if opts["fr"] != "none":
        threading.Thread(
            target=fr_dumper, args=(outdir, rank, opts["fr"], stop), daemon=True
        ).start()
    torch.manual_seed(0)
    model = torch.nn.Linear(opts["dim"], 4)
    net: torch.nn.Module = model
    if opts["ddp"]:
        net = torch.nn.parallel.DistributedDataParallel(model)
    optim = torch.optim.SGD(net.parameters(), lr=0.01)
    stuck_at = None
    if opts["culprit"] and opts["fault"] in ("dataloader", "dataloader-worker"):
        stuck_at = opts["at"] * opts["batch"]
    data = Shard(
        opts["steps"] * opts["batch"],
        opts["dim"],
        stuck_at,
        lambda: mark(outdir, rank, f"fault {opts['at']}"),
    )
    workers = 1 if opts["fault"] == "dataloader-worker" else 0
    loader = DataLoader(data, batch_size=opts["batch"], num_workers=workers)
    if opts["culprit"] and opts["fault"] == "skip-branch":
        opts["skip_at"] = opts["at"]
    step = 0
    for step, (x, y) in enumerate(loader):
        mark(outdir, rank, f"step {step}")
        inject(opts, model, step)
        loss = torch.nn.functional.mse_loss(net(x), y)
        optim.zero_grad()
        loss.backward()
        if not opts["ddp"]:
            sync_gradients(model, world)
        optim.step()
        if opts.get("skip_at") == step:
            # A data-dependent branch: this rank's batch had no valid targets, so it skips the
            # metric all-reduce the others enter.
            log(opts, f"step {step} no valid targets, skipping metrics")
            continue
        value = reduce_metric(loss, opts, step)
        if step % opts["log_every"] == 0:
            log(opts, f"step {step} loss {value:.4f}")
    mark(outdir, rank, f"done {step}")
    dist.barrier()
    if opts["fr"] != "none" and opts.get("dump_at_end"):
        stop.set()
        dump_fr(outdir, rank, opts["fr"])
    log(opts, "training finished")
    dist.destroy_process_group()


def run_rank(opts: Opts) -> None:
    """The child's entry point: its output to its own log, faulthandler on SIGUSR1, then train."""
    fd = os.open(opts["log_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    stdin_r, _stdin_w = os.pipe()  # input() waits on a pipe nobody writes to
    os.dup2(stdin_r, 0)
    if opts["faulthandler"]:
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    code = 0
    try:
        train(opts)
    except BaseException:
        import traceback

        traceback.print_exc()
        if opts["fr"] != "none" and opts.get("dump_on_error"):
            with contextlib.suppress(Exception):
                dump_fr(opts["outdir"], opts["rank"], opts["fr"])
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
