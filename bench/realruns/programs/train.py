"""A small real PyTorch training job that finishes, recovers, or fails in one chosen way.

Run alone (`python train.py ...`), under `torchrun` or `accelerate launch` (rank and world size
from the environment), or through `launch.py` (mp.spawn / plain multiprocessing). Every failure
is produced by real PyTorch code on CPU; nothing here prints an error message of its own making
except where a real training script would (the "stopping" lines of a trainer that checks its loss).

--fault picks the failure, --fail-rank the rank that hits it first (-1: every rank), --fail-step
the step. See bench/realruns/README.md for what each fault does.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, Dataset


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Options from REALRUNS_ARGS and then the command line: generate.py passes them through the
    environment so that no launcher's echo of the command line names the fault."""
    argv = shlex.split(os.environ.get("REALRUNS_ARGS", "")) + (
        sys.argv[1:] if argv is None else argv
    )
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--variant", default="")
    p.add_argument("--fail-rank", type=int, default=0)
    p.add_argument("--fail-step", type=int, default=5)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=50)
    p.add_argument("--classes", type=int, default=5)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log", default="print", choices=["print", "logging", "metrics", "quiet"])
    p.add_argument("--pg-timeout", type=float, default=30.0)
    p.add_argument("--stack", default="plain", choices=["plain", "accelerate"])
    p.add_argument("--workdir", default="/tmp/realruns-work")
    p.add_argument("--cgroup", default="")
    return p.parse_args(argv)


class Net(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int, vocab: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.inp = nn.Linear(features, hidden)
        self.block = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, classes)
        self.aux = nn.Linear(hidden, 1)

    def forward(
        self, x: torch.Tensor, tokens: torch.Tensor, use_aux: bool = True, refine: int = 0
    ) -> tuple:
        h = self.inp(x) + self.embed(tokens).mean(1)
        h = h + self.block(h)
        for _ in range(refine):
            # extra refinement passes through the same block, checkpointed to save memory
            h = h + checkpoint(self.block, h, use_reentrant=True)
        out = self.head(h)
        aux = self.aux(h).squeeze(-1) if use_aux else None
        return out, aux, h


class Synthetic(Dataset):
    """Random samples; `bad_index` makes one sample wrong in the way the fault asks."""

    def __init__(
        self, args: argparse.Namespace, rank: int, n: int, bad: str = "", bad_index: int = -1
    ):
        g = torch.Generator().manual_seed(args.seed * 1000 + rank)
        self.x = torch.randn(n, args.features, generator=g)
        self.tokens = torch.randint(0, args.vocab, (n, 6), generator=g)
        self.y = torch.randint(0, args.classes, (n,), generator=g)
        self.bad, self.bad_index, self.args = bad, bad_index, args
        self.open_files: list = []

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple:
        x, tokens = self.x[i], self.tokens[i]
        if self.bad == "leak-files":
            # a shard reader that opens a file per sample and never closes it
            path = os.path.join(self.args.workdir, f"shard_{i % 7}.bin")
            self.open_files.append(open(path, "rb"))  # noqa: SIM115 (the leak is the point)
        if i == self.bad_index:
            if self.bad == "ragged":
                x = torch.randn(self.args.features + 3)
            elif self.bad.startswith("kill-"):
                sig = {
                    "kill-9": signal.SIGKILL,
                    "kill-11": signal.SIGSEGV,
                    "kill-6": signal.SIGABRT,
                }
                os.kill(os.getpid(), sig[self.bad])
                time.sleep(5)
        if self.bad == "big":
            x = torch.randn(self.args.features * 4096)
        return x, tokens, self.y[i]


class Logger:
    def __init__(self, args: argparse.Namespace, rank: int, world: int) -> None:
        self.args, self.rank, self.world = args, rank, world
        self.log = logging.getLogger("train")
        if args.log == "logging":
            logging.basicConfig(
                level=logging.INFO,
                format=f"%(asctime)s.%(msecs)03d %(levelname)s [rank{rank}] %(name)s: %(message)s",
                datefmt="%Y-%m-%d %H:%M:%S",
                stream=sys.stderr,
            )

    def info(self, msg: str) -> None:
        if self.args.log == "quiet":
            return
        if self.args.log == "logging":
            self.log.info(msg)
        elif self.args.log == "metrics":
            if self.rank == 0:
                print(msg, flush=True)
        else:
            prefix = f"rank {self.rank}: " if self.world > 1 else ""
            print(prefix + msg, flush=True)

    def warning(self, msg: str, exc_info: bool = False) -> None:
        if self.args.log == "logging":
            self.log.warning(msg, exc_info=exc_info)
        else:
            print(f"WARNING: {msg}", file=sys.stderr, flush=True)
            if exc_info:
                import traceback

                traceback.print_exc()

    def step(self, step: int, loss: float, grad_norm: float, lr: float) -> None:
        if self.args.log == "metrics":
            if self.rank == 0:
                epoch = step / self.args.steps
                print(
                    f"{{'loss': {loss:.4f}, 'grad_norm': {grad_norm:.4f}, "
                    f"'learning_rate': {lr:.2e}, 'epoch': {epoch:.2f}}}",
                    flush=True,
                )
        else:
            self.info(f"step {step}/{self.args.steps} loss {loss:.4f} grad_norm {grad_norm:.3f}")


def failing(args: argparse.Namespace, rank: int, step: int | None = None) -> bool:
    hit_rank = args.fail_rank < 0 or args.fail_rank == rank
    return hit_rank and (step is None or step == args.fail_step)


def join_cgroup_and_grow(args: argparse.Namespace) -> None:
    """Move this process into a memory-limited cgroup, then keep allocating: the kernel's OOM
    killer ends it with SIGKILL, as it would a job that outgrows the host."""
    with open(os.path.join(args.cgroup, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    hoard = []
    while True:
        hoard.append(torch.ones(16 * 1024 * 1024 // 4))  # 16 MB, touched


def resume(args: argparse.Namespace, model: nn.Module, log: Logger, rank: int) -> None:
    path = os.path.join(args.workdir, "checkpoint.pt")
    if args.fault == "ckpt-retry" and failing(args, rank):
        for attempt in range(1, 4):
            try:
                state = torch.load(path)
                break
            except (RuntimeError, EOFError, OSError) as exc:
                log.warning(
                    f"loading {path} failed (attempt {attempt}/3): {exc}; retrying in 1.5s",
                    exc_info=args.variant == "traceback",
                )
                time.sleep(1.5)
        model.load_state_dict(state)
        log.info(f"resumed from {path} after {attempt} attempts")
        return
    if args.fault in ("state-dict", "ckpt-corrupt") and failing(args, rank):
        log.info(f"resuming from {path}")
        state = torch.load(path, map_location="cpu", weights_only=args.variant != "unsafe")
        if isinstance(state, dict) and "model" in state:
            state = state["model"]
        model.load_state_dict(state)


EXTENSION_SOURCE = """
/* a fused op compiled against another libtorch: it calls a c10 symbol this torch does not export */
namespace c10 { struct TensorImpl { long size_v2(long d) const; }; }
long fused_rows(const c10::TensorImpl* t) { return t->size_v2(0); }
extern "C" void* PyInit_fused_ops(void) { return 0; }
"""


def import_extension(args: argparse.Namespace, log: Logger) -> None:
    """Build a tiny C++ extension the way a wheel built for another torch arrives (undefined
    symbols left for the loader), then import it: the dynamic loader refuses it."""
    import importlib
    import subprocess
    import sysconfig

    build = os.path.join(args.workdir, "build")
    os.makedirs(build, exist_ok=True)
    src = os.path.join(build, "fused_ops.cpp")
    Path(src).write_text(EXTENSION_SOURCE)
    so = os.path.join(build, "fused_ops" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["g++", "-shared", "-fPIC", "-o", so, src], check=True)
    sys.path.insert(0, build)
    log.info("loading the fused_ops extension")
    importlib.import_module("fused_ops")


def build_model(args: argparse.Namespace, rank: int, log: Logger) -> nn.Module:
    if args.fault == "setup-oom" and failing(args, rank):
        log.info(f"building model with hidden size {args.hidden * 4096}")
        return Net(args.features, args.hidden * 4096, args.classes, args.vocab * 2000)
    return Net(args.features, args.hidden, args.classes, args.vocab)


def run(args: argparse.Namespace, rank: int, world: int) -> None:
    torch.manual_seed(args.seed)
    log = Logger(args, rank, world)
    distributed = world > 1
    accelerator = None
    if args.fault == "cuda" and failing(args, rank):
        if args.variant == "nccl":
            dist.init_process_group("nccl", rank=rank, world_size=world)
        elif args.variant == "to":
            torch.zeros(1).to("cuda")
        else:
            torch.cuda.set_device(rank)
    if args.stack == "accelerate":
        from accelerate import Accelerator

        accelerator = Accelerator(cpu=True)
        rank, world = accelerator.process_index, accelerator.num_processes
        distributed = False  # accelerate owns the process group and the DDP wrapper
    elif distributed:
        if args.fault == "rendezvous" and args.variant == "missing-rank":
            world += 1  # one rank of the declared world size is never started
        dist.init_process_group(
            "gloo",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=args.pg_timeout),
        )
    log.info(f"started rank {rank} of {world} (pid {os.getpid()}, torch {torch.__version__})")

    if args.fault == "ext-import" and failing(args, rank):
        import_extension(args, log)
    model = build_model(args, rank, log)
    if args.fault == "state-dict" and failing(args, rank):
        os.makedirs(args.workdir, exist_ok=True)
        other = Net(args.features, args.hidden * 2, args.classes, args.vocab)
        if args.variant == "ddp-prefix":
            state = {f"module.{k}": v for k, v in model.state_dict().items()}
        elif args.variant == "missing":
            state = {k: v for k, v in model.state_dict().items() if not k.startswith("aux")}
        else:
            state = other.state_dict()
        if rank <= 0 or args.fail_rank >= 0:
            torch.save(state, os.path.join(args.workdir, "checkpoint.pt"))
        if distributed:
            dist.barrier()
    resume(args, model, log, rank)

    if args.fault == "amp-fp16" and failing(args, rank):
        model = model.half()
    find_unused = args.fault in ("ready-twice", "warn-unused")
    if distributed and args.fault != "collective":
        # (the collective scenario runs with TORCH_DISTRIBUTED_DEBUG=DETAIL, under which this
        # CPU build crashes inside the DDP constructor; it syncs by hand instead)
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=find_unused)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cpu") if args.fault == "amp-fp16" else None

    bad, bad_index = "", -1
    n = args.batch * (args.steps + 2)
    if args.fault in ("collate", "worker-killed") and failing(args, rank):
        bad_index = args.batch * args.fail_step + 3
        bad = "ragged" if args.fault == "collate" else f"kill-{args.variant or '9'}"
    if args.fault == "shm":
        bad = "big"
    if args.fault == "open-files" and failing(args, rank):
        bad = "leak-files"
        os.makedirs(args.workdir, exist_ok=True)
        for i in range(7):
            with open(os.path.join(args.workdir, f"shard_{i}.bin"), "wb") as f:
                f.write(os.urandom(64))
    data = Synthetic(args, rank, n, bad, bad_index)
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers, shuffle=False)
    if accelerator is not None:
        model, opt, loader = accelerator.prepare(model, opt, loader)
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    step_fn = model
    if args.fault == "recompile" and failing(args, rank):
        torch._dynamo.config.recompile_limit = 4
        step_fn = torch.compile(model, backend="eager", dynamic=False)

    lr = args.lr
    skipped = 0
    step = 0
    for x, tokens, y in loader:
        step += 1
        if step > args.steps:
            break
        hit = failing(args, rank, step)
        use_aux = True
        if hit and args.fault == "shape":
            if args.variant == "view":
                x = x[:, :-1].reshape(args.batch, -1, 4).reshape(args.batch * 3, -1)
            else:
                x = torch.cat([x, torch.randn(x.shape[0], 1)], dim=1)
        elif hit and args.fault == "dtype":
            x = x.double()
        elif hit and args.fault == "device":
            x = x.to("meta")
        elif hit and args.fault == "embedding":
            tokens = tokens.clone()
            tokens[1, 2] = args.vocab + step
        elif hit and args.fault in ("nan", "skip-nonfinite"):
            x = x.clone()
            x[0, 0] = float("nan")
        elif (hit and args.fault == "unused") or (args.fault == "unused" and args.fail_rank < 0):
            use_aux = False
        elif hit and args.fault == "gloo-hang":
            log.info("running evaluation on this rank before the next step")
            time.sleep(args.pg_timeout * 4)
        elif hit and args.fault == "child-exit":
            crash = {"segv": signal.SIGSEGV, "bus": signal.SIGBUS, "fpe": signal.SIGFPE}
            if args.variant in crash:
                os.kill(os.getpid(), crash[args.variant])
            elif args.variant == "abort":
                os.abort()
            else:
                os._exit(int(args.variant or 1))
        elif hit and args.fault == "oom-kill":
            if args.variant == "numpy":
                import numpy as np

                np.ones((args.hidden * 10000, args.hidden * 10000))
            join_cgroup_and_grow(args)
        elif hit and args.fault == "disk-full" and rank <= 0:
            path = os.path.join(args.workdir, f"checkpoint_step{step}.pt")
            log.info(f"saving checkpoint to {path}")
            torch.save(
                {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, path
            )
        elif hit and args.fault == "collective":
            metric = torch.ones(3 if args.variant != "numel" else 5)
            if args.variant == "op":
                dist.broadcast(metric, src=0)
            else:
                dist.all_reduce(metric)
        if args.fault == "collective" and not hit and step == args.fail_step:
            metric = torch.ones(3)
            dist.all_reduce(metric)
        if args.fault == "lr-spike" and step == args.fail_step:
            lr = args.lr * 60
            for group in opt.param_groups:
                group["lr"] = lr

        if hit and args.fault == "no-grad":
            with torch.no_grad():
                out, aux, h = model(x, tokens)
        elif args.fault == "recompile" and failing(args, rank):
            # the last batch of each "bucket" is cut short: a new static shape every step
            k = step % 6 + 2
            x, tokens, y = x[:k], tokens[:k], y[:k]
            out, aux, h = step_fn(x, tokens, True)
        else:
            if args.fault == "amp-fp16" and failing(args, rank):
                x = x.half()
            refine = 2 if args.fault == "ready-twice" and (hit or args.fail_rank < 0) else 0
            out, aux, h = step_fn(x, tokens, use_aux, refine)
        if hit and args.fault == "inplace":
            h2 = torch.sigmoid(h)
            h2.mul_(2.0)
            out = out + h2.sum(-1, keepdim=True) * 0.0
            out = out + h2.mean()
            h2.add_(1.0)
        loss = F.cross_entropy(out.float(), y)
        if aux is not None:
            loss = loss + 0.1 * aux.float().pow(2).mean()
        if hit and args.fault == "anomaly":
            pair = (h.unsqueeze(0) - h.unsqueeze(1)).pow(2).sum(-1).sqrt()
            loss = loss + 0.01 * pair.mean()
        if args.fault == "warn-target":
            loss = loss + 0.01 * F.mse_loss(out[:, :1], y.float())

        value = loss.item()
        if args.fault == "skip-nonfinite":
            flag = torch.tensor([0.0 if math.isfinite(value) else 1.0])
            if distributed:
                dist.all_reduce(flag)
            if flag.item() > 0:
                skipped += 1
                log.warning(
                    f"non-finite loss ({value}) at step {step}, skipping this batch on every rank"
                )
                opt.zero_grad(set_to_none=True)
                continue
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        elif accelerator is not None:
            accelerator.backward(loss)
        else:
            loss.backward()
        if hit and args.fault == "backward-twice":
            (0.5 * loss).backward()
        params = [p for p in model.parameters() if p.grad is not None]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, 1e9)) if params else 0.0
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        log.step(step, value, grad_norm, lr)
        if args.fault == "nan" and not math.isfinite(value) and args.variant == "raise":
            raise RuntimeError(f"Loss is {value} at step {step}, stopping training")
    if args.fault == "skip-nonfinite":
        log.info(f"skipped {skipped} non-finite batches")
    log.info("training finished")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


def ckpt_writer(args: argparse.Namespace) -> None:
    """For ckpt-retry: another process is still writing the checkpoint when training starts."""
    os.makedirs(args.workdir, exist_ok=True)
    path = os.path.join(args.workdir, "checkpoint.pt")
    net = Net(args.features, args.hidden, args.classes, args.vocab)
    tmp = path + ".full"
    torch.save(net.state_dict(), tmp)
    blob = Path(tmp).read_bytes()
    with open(path, "wb") as f:
        f.write(blob[: len(blob) // 3])

    def finish() -> None:
        time.sleep(2.0)
        os.replace(tmp, path)

    threading.Thread(target=finish, daemon=True).start()


def prepare(args: argparse.Namespace) -> None:
    """Files a scenario needs before training: a corrupt checkpoint, a half-written one."""
    os.makedirs(args.workdir, exist_ok=True)
    path = os.path.join(args.workdir, "checkpoint.pt")
    if args.fault == "ckpt-corrupt":
        net = Net(args.features, args.hidden, args.classes, args.vocab)
        torch.save({"model": net.state_dict(), "step": 100}, path)
        blob = Path(path).read_bytes()
        with open(path, "wb") as f:
            if args.variant == "empty":
                pass
            elif args.variant == "garbage":
                f.write(b"<html><body>404 Not Found</body></html>\n")
            else:
                f.write(blob[: len(blob) * 2 // 3])


def main(argv: list[str] | None = None, rank: int | None = None, world: int | None = None) -> None:
    args = parse(argv)
    if rank is None:
        rank = int(os.environ.get("RANK", "0"))
        world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.fault == "ckpt-retry" and failing(args, rank):
        ckpt_writer(args)
    if args.log != "logging":
        run(args, rank, world or 1)
        return
    try:
        run(args, rank, world or 1)
    except Exception:
        # what many training scripts do: the error with a timestamp in the run's own log
        logging.getLogger("train").exception("training failed")
        raise


if __name__ == "__main__":
    if "--prepare" in sys.argv:
        os.environ.pop("REALRUNS_ARGS", None)
        prepare(parse([a for a in sys.argv[1:] if a != "--prepare"]))
        sys.exit(0)
    main()
