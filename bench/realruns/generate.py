"""`make realruns`: run every scenario's real PyTorch program on CPU and keep what it printed.

Each scenario runs programs/train.py (or lit_train.py) under one launcher with one fault, captures
stdout and stderr as the launcher interleaves them (or, for the --log-dir forms, the per-rank files
torchrun wrote, concatenated in rank order), checks that the run did what the scenario meant (the
designed error text is there, or a healthy run finished), and writes the log with its label to
corpus/dev/ or corpus/sealed/. The label comes from the scenario, never from the engine.

Runs sequentially, each bounded by a timeout; needs root for the scenarios that mount a small
tmpfs (/dev/shm, a full disk) or limit memory with a cgroup, and skips those otherwise.

    .venv-realruns/bin/python bench/realruns/generate.py [--only SUBSTRING] [--list]
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
CORPUS = HERE / "corpus"
BIN = Path(sys.executable).parent
LAUNCHERS = (
    "single",
    "torchrun",
    "torchrun-tee",
    "torchrun-role",
    "torchrun-logdir",
    "torchrun-logdir-cat",
    "torchrun-c10d",
    "spawn",
    "mp",
    "accelerate",
    "lightning",
)


@dataclass
class Scenario:
    name: str  # slug__what; the sealed split hashes it
    slug: str
    launcher: str
    args: list[str] = field(default_factory=list)
    nprocs: int = 1
    initiating_rank: int | None = None
    how: str = ""
    expect: str = ""  # a regex the captured log must contain (healthy: the run must also exit 0)
    env: dict[str, str] = field(default_factory=dict)
    timeout: int = 60
    shm_kb: int = 0  # a /dev/shm of this size in a private mount namespace
    disk_kb: int = 0  # the work directory on a tmpfs of this size
    nofile: int = 0
    cgroup_mb: int = 0  # a memory cgroup of this size for the rank that joins it
    occupy_port: bool = False
    prepare: bool = False
    via_bash: bool = False  # run through bash, as a user's terminal would (it reports "Killed")

    @property
    def multi_rank(self) -> bool:
        return self.nprocs > 1

    @property
    def program(self) -> str:
        return "lit_train.py" if self.launcher == "lightning" else "train.py"


# The parts nobody working on the engine reads: the generator does not name their runs.
BLIND = ("sealed3", "sealed4", "sealed5", "sealed6")


def sealed(name: str) -> bool:
    """About a third of the scenarios, fixed by the name alone."""
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 == 0


def part_of(sc: Scenario, fresh: bool) -> str:
    return "fresh" if fresh else "sealed" if sealed(sc.name) else "dev"


def a(**kw: object) -> list[str]:
    out: list[str] = []
    for key, value in kw.items():
        out += [f"--{key.replace('_', '-')}", str(value)]
    return out


E = {
    "shape-mismatch": r"mat1 and mat2 shapes cannot be multiplied|is invalid for input of size"
    r"|must match the size of tensor",
    "dtype-mismatch": r"must have the same dtype|expected scalar type|expected m1 and m2",
    "device-mismatch": r"is not on the expected device",
    "embedding-index-out-of-range": r"index out of range in self",
    "nan-loss": r"[Ll]oss[^\n]*nan|train_loss = nan",
    "anomaly-nan-backward": r"returned nan values",
    "backward-twice": r"backward through the graph a second time",
    "inplace-modification": r"modified by an inplace operation",
    "no-grad-fn": r"does not require grad",
    "state-dict-mismatch": r"Error\(s\) in loading state_dict",
    # a truncated zip: PyTorchFileReader's "[Errno 22] Invalid argument" or miniz's central directory
    "checkpoint-corrupt": r"PytorchStreamReader|EOFError|UnpicklingError|invalid load key"
    r"|PyTorchFileReader|Errno 22",
    "disk-full": r"No space left on device|file write failed|unexpected pos|PytorchStreamWriter",
    "too-many-open-files": r"Too many open files|received 0 items of ancdata",
    "host-oom-killed": r"Killed|SIGKILL|exitcode *: -9|Unable to allocate",
    "collate-size-mismatch": r"stack expects each tensor to be equal size|resize storage",
    "dataloader-worker-died": r"DataLoader worker \(pid",
    "dataloader-shm": r"shared memory|No space left on device|Bus error|SIGBUS",
    "collective-mismatch": r"[Mm]ismatch between collectives|Detected mismatch",
    "gloo-timeout": r"Timed out waiting \d+ ?ms",
    # torch 2.13's gloo init on a store that the missing rank never writes: "wait timeout after Nms"
    "rendezvous-timeout": r"RendezvousTimeoutError|Timed out after \d+ seconds waiting for clients"
    r"|DistStoreError: wait timeout",
    "address-in-use": r"EADDRINUSE|Address already in use",
    "ddp-unused-parameters": r"finished reduction in the prior iteration",
    "ddp-ready-twice": r"mark a variable ready only once",
    "elastic-child-failed": r"ChildFailedError|exited with exit code|terminated with",
    # torch.cuda.set_device on a CPU build: "module 'torch._C' has no attribute '_cuda_setDevice'"
    "cuda-not-available": r"not compiled with CUDA|Torch not compiled|NCCL|_cuda_setDevice",
    "amp-fp16-params-unscale": r"Attempting to unscale FP16 gradients",
    "setup-oom": r"can't allocate memory",
    "loss-divergence": r"training finished",
    "dynamo-recompile-limit": r"recompile_limit|cache_size_limit",
    "extension-abi-mismatch": r"undefined symbol",
    "none": r"training finished",
}


def scenarios() -> list[Scenario]:
    s: list[Scenario] = []

    def add(
        name: str,
        slug: str,
        launcher: str,
        args: list[str],
        nprocs: int = 1,
        rank: int | None = None,
        how: str = "",
        **kw: object,
    ) -> None:
        kw.setdefault("expect", E[slug])
        s.append(Scenario(f"{slug}__{name}", slug, launcher, args, nprocs, rank, how, **kw))  # type: ignore[arg-type]

    # --- multi-rank: one rank breaks, the others die collaterally -------------------------
    for i, (launcher, w, r, step, seed) in enumerate(
        [
            ("torchrun", 3, 1, 4, 1),
            ("torchrun-tee", 2, 1, 3, 2),
            ("torchrun-role", 4, 2, 5, 3),
            ("torchrun-logdir", 3, 2, 6, 4),
            ("torchrun-logdir-cat", 2, 1, 4, 5),
            ("spawn", 2, 1, 3, 6),
            ("mp", 3, 2, 4, 7),
            ("accelerate", 2, 1, 3, 8),
        ]
    ):
        log = "logging" if launcher.startswith("torchrun-logdir") or i % 3 == 2 else "print"
        variant = "view" if i % 4 == 3 else ""
        add(
            f"{launcher}_w{w}_rank{r}{'_view' if variant else ''}",
            "shape-mismatch",
            launcher,
            a(
                fault="shape",
                variant=variant or "linear",
                fail_rank=r,
                fail_step=step,
                seed=seed,
                hidden=16 + 8 * i,
                log=log,
            ),
            w,
            r,
            f"rank {r} of {w} gets a batch with the wrong feature layout at step {step}; the other ranks wait in DDP's all-reduce and die when it exits",
        )
    add(
        "lightning_w2_rank1",
        "shape-mismatch",
        "lightning",
        a(fault="shape", fail_rank=1, fail_step=3, devices=2),
        2,
        1,
        "Lightning DDP on 2 CPU processes; rank 1's batch gains a feature column at batch 3",
    )
    for launcher, w, r, log in [
        ("torchrun-tee", 3, 2, "print"),
        ("spawn", 2, 0, "print"),
        ("torchrun-logdir", 2, 1, "logging"),
        ("accelerate", 3, 1, "print"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "dtype-mismatch",
            launcher,
            a(fault="dtype", fail_rank=r, fail_step=3 + r, seed=10 + r, log=log),
            w,
            r,
            f"rank {r}'s batch arrives as float64 at step {3 + r}; F.linear refuses Double against Float weights",
        )
    for launcher, w, r in [("torchrun", 2, 1), ("mp", 2, 1)]:
        add(
            f"{launcher}_w{w}_rank{r}_meta",
            "device-mismatch",
            launcher,
            a(fault="device", fail_rank=r, fail_step=4, seed=20),
            w,
            r,
            f"rank {r} moves its batch to the meta device at step 4 (a device-placement bug); F.linear refuses it",
        )
    for launcher, w, r in [("torchrun-role", 2, 1), ("torchrun-logdir-cat", 3, 0), ("spawn", 4, 3)]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "embedding-index-out-of-range",
            launcher,
            a(
                fault="embedding",
                fail_rank=r,
                fail_step=2 + r,
                vocab=30 + 10 * r,
                log="logging" if "logdir" in launcher else "print",
            ),
            w,
            r,
            f"rank {r} sees a token id past the vocabulary at step {2 + r}",
        )
    add(
        "lightning_w2_rank1",
        "embedding-index-out-of-range",
        "lightning",
        a(fault="embedding", fail_rank=1, fail_step=2, devices=2, seed=3),
        2,
        1,
        "Lightning DDP, rank 1's batch holds a token id past the vocabulary",
    )
    for launcher, w, r, log in [
        ("torchrun-tee", 2, 1, "print"),
        ("torchrun-logdir", 3, 2, "logging"),
        ("spawn", 2, 0, "print"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}_stop",
            "nan-loss",
            launcher,
            a(fault="nan", variant="raise", fail_rank=r, fail_step=4, seed=30 + w, log=log),
            w,
            r,
            f"a nan sample on rank {r} at step 4; its loss is nan first, DDP spreads nan weights to every rank and the trainer stops on a non-finite loss",
        )
    add(
        "torchrun_w2_metrics_continue",
        "nan-loss",
        "torchrun",
        a(fault="nan", fail_rank=1, fail_step=3, log="metrics", seed=33),
        2,
        None,
        "a nan sample on rank 1; only rank 0 prints metric dictionaries, which show loss/grad_norm nan to the end (no rank can be singled out from the log)",
    )
    add(
        "lightning_w2_rank1_earlystop",
        "nan-loss",
        "lightning",
        a(fault="nan", fail_rank=1, fail_step=3, devices=2),
        2,
        None,
        "Lightning DDP, a nan sample on rank 1; EarlyStopping's finiteness check on the synced train_loss stops every rank",
    )
    for launcher, w, r in [("torchrun-tee", 2, 1), ("spawn", 3, 2)]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "anomaly-nan-backward",
            launcher,
            a(fault="anomaly", fail_rank=r, fail_step=3, seed=40 + w),
            w,
            r,
            f"detect_anomaly on; rank {r} adds a pairwise-distance loss whose sqrt at zero gives nan in backward at step 3",
        )
    add(
        "lightning_w2_rank0",
        "anomaly-nan-backward",
        "lightning",
        a(fault="anomaly", fail_rank=0, fail_step=2, devices=2),
        2,
        0,
        "Trainer(detect_anomaly=True); rank 0's loss takes sqrt at zero in backward",
    )
    for launcher, w, r, log in [
        ("torchrun", 2, 1, "print"),
        ("torchrun-logdir", 2, 0, "logging"),
        ("mp", 3, 1, "print"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "backward-twice",
            launcher,
            a(fault="backward-twice", fail_rank=r, fail_step=3, seed=50, log=log),
            w,
            r,
            f"rank {r} calls backward a second time on the same graph at step 3",
        )
    for launcher, w, r in [("torchrun-role", 3, 0), ("spawn", 2, 1), ("accelerate", 2, 1)]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "inplace-modification",
            launcher,
            a(fault="inplace", fail_rank=r, fail_step=4, seed=60),
            w,
            r,
            f"rank {r} modifies a sigmoid output in place before backward at step 4",
        )
    for launcher, w, r, log in [
        ("torchrun-tee", 2, 1, "print"),
        ("torchrun-logdir-cat", 3, 1, "logging"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}",
            "no-grad-fn",
            launcher,
            a(fault="no-grad", fail_rank=r, fail_step=3, seed=70, log=log),
            w,
            r,
            f"rank {r} runs its forward under torch.no_grad() at step 3 and calls backward",
        )
    add(
        "torchrun_w2_all_size",
        "state-dict-mismatch",
        "torchrun",
        a(fault="state-dict", fail_rank=-1, seed=80),
        2,
        None,
        "every rank resumes from a checkpoint saved with twice the hidden size",
    )
    add(
        "mp_w3_all_missing",
        "state-dict-mismatch",
        "mp",
        a(fault="state-dict", variant="missing", fail_rank=-1, seed=81),
        3,
        None,
        "every rank resumes from a checkpoint without the aux head (Missing key(s))",
    )
    add(
        "torchrun-tee_w2_all_truncated",
        "checkpoint-corrupt",
        "torchrun-tee",
        a(fault="ckpt-corrupt", variant="truncated", fail_rank=-1),
        2,
        None,
        "every rank resumes from a checkpoint cut to two thirds of its size",
        prepare=True,
    )
    add(
        "spawn_w2_all_empty",
        "checkpoint-corrupt",
        "spawn",
        a(fault="ckpt-corrupt", variant="empty", fail_rank=-1),
        2,
        None,
        "every rank resumes from a 0-byte checkpoint",
        prepare=True,
    )
    for launcher, w in [("torchrun-tee", 2), ("spawn", 3)]:
        add(
            f"{launcher}_w{w}_rank0_tinyfs",
            "disk-full",
            launcher,
            a(fault="disk-full", fail_rank=0, fail_step=3, hidden=256),
            w,
            0,
            "rank 0 saves a checkpoint at step 3 into a work directory on a 200 KB tmpfs",
            disk_kb=200,
        )
    add(
        "torchrun_w2_rank1_leak",
        "too-many-open-files",
        "torchrun",
        a(fault="open-files", fail_rank=1, fail_step=1, seed=90),
        2,
        1,
        "open files limited to 64; rank 1's dataset opens a shard file per sample and never closes it",
        nofile=64,
    )
    for launcher, w, r in [("torchrun", 3, 2), ("torchrun-tee", 2, 1), ("spawn", 2, 1)]:
        add(
            f"{launcher}_w{w}_rank{r}_cgroup",
            "host-oom-killed",
            launcher,
            a(fault="oom-kill", fail_rank=r, fail_step=3 + r, seed=100 + w),
            w,
            r,
            f"rank {r} joins a 300 MB memory cgroup at step {3 + r} and keeps allocating until the kernel's OOM killer sends SIGKILL",
            cgroup_mb=300,
        )
    for launcher, w, r, workers in [("torchrun-tee", 2, 1, 0), ("torchrun-logdir", 2, 0, 1)]:
        add(
            f"{launcher}_w{w}_rank{r}_workers{workers}",
            "collate-size-mismatch",
            launcher,
            a(
                fault="collate",
                fail_rank=r,
                fail_step=2,
                workers=workers,
                log="logging" if "logdir" in launcher else "print",
            ),
            w,
            r,
            f"one sample of rank {r}'s dataset has 3 extra features; default_collate cannot stack it (num_workers={workers})",
        )
    for launcher, w, r, sig in [
        ("torchrun", 2, 1, "9"),
        ("torchrun-tee", 3, 2, "11"),
        ("spawn", 2, 0, "6"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}_sig{sig}",
            "dataloader-worker-died",
            launcher,
            a(fault="worker-killed", variant=sig, fail_rank=r, fail_step=2, workers=1, seed=110),
            w,
            r,
            f"rank {r}'s DataLoader worker dies by signal {sig} while loading a batch of step 2",
        )
    add(
        "torchrun_w2_all_shm1mb",
        "dataloader-shm",
        "torchrun",
        a(fault="shm", fail_rank=-1, workers=2, batch=16, steps=4),
        2,
        None,
        "/dev/shm is a 1 MB tmpfs (a container's small default); DataLoader workers pass 1 MB batches through it",
        shm_kb=1024,
    )
    for launcher, w, r, variant in [
        ("torchrun-tee", 3, 1, "numel"),
        ("spawn", 2, 1, "op"),
        ("torchrun-logdir", 4, 3, "numel"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}_{variant}",
            "collective-mismatch",
            launcher,
            a(
                fault="collective",
                variant=variant,
                fail_rank=r,
                fail_step=3,
                log="logging" if "logdir" in launcher else "print",
            ),
            w,
            r,
            f"TORCH_DISTRIBUTED_DEBUG=DETAIL; at step 3 rank {r} syncs a metric with a different {'size' if variant == 'numel' else 'collective'} from the other ranks",
            env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
        )
    for launcher, w, r in [
        ("torchrun", 2, 1),
        ("torchrun-tee", 3, 0),
        ("torchrun-logdir", 2, 1),
        ("spawn", 2, 1),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}_hang",
            "gloo-timeout",
            launcher,
            a(
                fault="gloo-hang",
                fail_rank=r,
                fail_step=3,
                pg_timeout=6,
                log="logging" if "logdir" in launcher else "print",
            ),
            w,
            r,
            f"rank {r} stalls before step 3 (a long evaluation on one rank); the others time out in gloo's all-reduce after 6 s",
            timeout=90,
        )
    add(
        "torchrun-c10d_nnodes2_one_node",
        "rendezvous-timeout",
        "torchrun-c10d",
        a(steps=3),
        2,
        None,
        "torchrun --nnodes 2 with the c10d rendezvous (join_timeout 8 s); the second node never starts",
    )
    add(
        "spawn_w2_declared3",
        "rendezvous-timeout",
        "spawn",
        a(fault="rendezvous", variant="missing-rank", pg_timeout=8),
        2,
        None,
        "mp.spawn starts 2 ranks but init_process_group declares world_size 3 (timeout 8 s); the store waits for the third",
    )
    for launcher in ("torchrun", "torchrun-tee"):
        add(
            f"{launcher}_port_taken",
            "address-in-use",
            launcher,
            a(steps=3),
            2,
            None,
            "--master-port names a port another process already listens on; the agent's TCPStore cannot bind it",
            occupy_port=True,
        )
    add(
        "spawn_w2_port_taken",
        "address-in-use",
        "spawn",
        a(steps=3),
        2,
        0,
        "MASTER_PORT is taken by another process; rank 0's TCPStore server cannot bind it",
        occupy_port=True,
    )
    for launcher, w, r in [
        ("torchrun-tee", 2, 1),
        ("torchrun", 3, -1),
        ("spawn", 2, 0),
        ("torchrun-logdir", 3, 2),
    ]:
        add(
            f"{launcher}_w{w}_rank{r if r >= 0 else 'all'}",
            "ddp-unused-parameters",
            launcher,
            a(
                fault="unused",
                fail_rank=r,
                fail_step=3,
                pg_timeout=20,
                log="logging" if "logdir" in launcher else "print",
            ),
            w,
            r if r >= 0 else None,
            "the aux head gets no gradient "
            + (f"on rank {r} from step 3" if r >= 0 else "on any rank")
            + " under DDP without find_unused_parameters",
        )
    for launcher, w, r in [("torchrun-tee", 2, 1), ("torchrun-role", 3, -1)]:
        add(
            f"{launcher}_w{w}_rank{r if r >= 0 else 'all'}",
            "ddp-ready-twice",
            launcher,
            a(fault="ready-twice", fail_rank=r, fail_step=3),
            w,
            r if r >= 0 else None,
            "two reentrant checkpoints over the same block with find_unused_parameters=True "
            + (f"on rank {r} at step 3" if r >= 0 else "on every rank"),
        )
    for launcher, w, r, variant in [
        ("torchrun", 2, 1, "1"),
        ("torchrun-tee", 3, 2, "segv"),
        ("torchrun-role", 2, 0, "abort"),
        ("accelerate", 2, 1, "3"),
    ]:
        add(
            f"{launcher}_w{w}_rank{r}_{variant}",
            "elastic-child-failed",
            launcher,
            a(fault="child-exit", variant=variant, fail_rank=r, fail_step=3),
            w,
            r,
            f"rank {r} ends at step 3 without a traceback ({'exit code ' + variant if variant.isdigit() else 'SIG' + variant.upper()})",
        )
    add(
        "torchrun_w2_set_device",
        "cuda-not-available",
        "torchrun",
        a(fault="cuda", fail_rank=-1),
        2,
        None,
        "every rank calls torch.cuda.set_device(rank) on a CPU-only build",
    )
    add(
        "spawn_w2_nccl",
        "cuda-not-available",
        "spawn",
        a(fault="cuda", variant="nccl", fail_rank=-1),
        2,
        None,
        "every rank asks for the NCCL backend on a CPU-only build",
    )
    add(
        "torchrun_w2_all",
        "amp-fp16-params-unscale",
        "torchrun",
        a(fault="amp-fp16", fail_rank=-1),
        2,
        None,
        "model.half() then GradScaler('cpu'): unscale_ refuses fp16 gradients on every rank",
    )
    add(
        "torchrun-tee_w2_all",
        "setup-oom",
        "torchrun-tee",
        a(fault="setup-oom", fail_rank=-1, hidden=64),
        2,
        None,
        "every rank builds a model whose embedding alone needs 100 GB; the CPU allocator refuses before the first step",
    )
    add(
        "torchrun_w2_all_undefined_symbol",
        "extension-abi-mismatch",
        "torchrun",
        a(fault="ext-import", fail_rank=-1),
        2,
        None,
        "every rank imports a C++ extension built against another libtorch; the loader reports an undefined c10 symbol",
    )
    add(
        "torchrun_w2_lr_spike",
        "loss-divergence",
        "torchrun",
        a(fault="lr-spike", fail_rank=-1, fail_step=6, steps=16, lr=0.02),
        2,
        None,
        "the learning rate is multiplied by 60 at step 6 on every rank; the loss jumps and stays high without becoming nan",
    )

    # --- single process -----------------------------------------------------------------
    single = [
        (
            "linear",
            "shape-mismatch",
            a(fault="shape", fail_step=4, seed=1),
            "a batch with one feature too many at step 4",
        ),
        (
            "view",
            "shape-mismatch",
            a(fault="shape", variant="view", fail_step=2, seed=2, log="logging"),
            "a reshape that does not fit the batch",
        ),
        (
            "double",
            "dtype-mismatch",
            a(fault="dtype", fail_step=3, seed=3),
            "a float64 batch into float32 weights",
        ),
        (
            "meta",
            "device-mismatch",
            a(fault="device", fail_step=2, seed=4),
            "a batch moved to the meta device",
        ),
        (
            "token",
            "embedding-index-out-of-range",
            a(fault="embedding", fail_step=5, vocab=64),
            "a token id past the vocabulary",
        ),
        (
            "stop",
            "nan-loss",
            a(fault="nan", variant="raise", fail_step=4, seed=5),
            "a nan sample; the trainer stops on the non-finite loss",
        ),
        (
            "metrics",
            "nan-loss",
            a(fault="nan", fail_step=3, log="metrics", seed=6),
            "a nan sample; metric dictionaries show nan to the end",
        ),
        (
            "sqrt",
            "anomaly-nan-backward",
            a(fault="anomaly", fail_step=3, seed=7, log="logging"),
            "anomaly mode catches sqrt at zero in backward",
        ),
        (
            "second",
            "backward-twice",
            a(fault="backward-twice", fail_step=2, seed=8),
            "backward twice through one graph",
        ),
        (
            "sigmoid",
            "inplace-modification",
            a(fault="inplace", fail_step=3, seed=9),
            "in-place change of a sigmoid output",
        ),
        (
            "nograd",
            "no-grad-fn",
            a(fault="no-grad", fail_step=2, seed=10),
            "forward under no_grad then backward",
        ),
        (
            "size",
            "state-dict-mismatch",
            a(fault="state-dict", seed=11),
            "a checkpoint saved with another hidden size",
        ),
        (
            "module_prefix",
            "state-dict-mismatch",
            a(fault="state-dict", variant="ddp-prefix", seed=12),
            "a DDP checkpoint (module. keys) into a plain model",
        ),
        (
            "missing",
            "state-dict-mismatch",
            a(fault="state-dict", variant="missing", seed=13, log="logging"),
            "a checkpoint without the aux head",
        ),
        (
            "truncated",
            "checkpoint-corrupt",
            a(fault="ckpt-corrupt", variant="truncated"),
            "a checkpoint cut short",
        ),
        (
            "empty",
            "checkpoint-corrupt",
            a(fault="ckpt-corrupt", variant="empty", log="logging"),
            "a 0-byte checkpoint",
        ),
        (
            "html",
            "checkpoint-corrupt",
            a(fault="ckpt-corrupt", variant="garbage"),
            "an HTML error page saved as the checkpoint",
        ),
        (
            "tinyfs",
            "disk-full",
            a(fault="disk-full", fail_step=2, hidden=256),
            "saving a checkpoint to a 200 KB tmpfs",
        ),
        (
            "leak",
            "too-many-open-files",
            a(fault="open-files", fail_step=1, log="logging"),
            "a shard reader leaking file handles under ulimit -n 64",
        ),
        (
            "cgroup",
            "host-oom-killed",
            a(fault="oom-kill", fail_step=3),
            "the process joins a 300 MB cgroup and grows until the OOM killer ends it (run from bash)",
        ),
        (
            "numpy",
            "host-oom-killed",
            a(fault="oom-kill", variant="numpy", fail_step=2, hidden=30),
            "numpy cannot allocate a 700 GB array",
        ),
        (
            "workers0",
            "collate-size-mismatch",
            a(fault="collate", fail_step=3),
            "a ragged sample, default_collate in the main process",
        ),
        (
            "workers2",
            "collate-size-mismatch",
            a(fault="collate", fail_step=2, workers=2),
            "a ragged sample, re-raised from a DataLoader worker",
        ),
        (
            "sigkill",
            "dataloader-worker-died",
            a(fault="worker-killed", variant="9", fail_step=3, workers=2),
            "a DataLoader worker SIGKILLed",
        ),
        (
            "sigsegv",
            "dataloader-worker-died",
            a(fault="worker-killed", variant="11", fail_step=2, workers=1, log="logging"),
            "a DataLoader worker segfaults",
        ),
        (
            "shm1mb",
            "dataloader-shm",
            a(fault="shm", workers=2, batch=16, steps=4),
            "1 MB /dev/shm and 1 MB batches from workers",
        ),
        (
            "set_device",
            "cuda-not-available",
            a(fault="cuda"),
            "torch.cuda.set_device on a CPU-only build",
        ),
        (
            "to_cuda",
            "cuda-not-available",
            a(fault="cuda", variant="to", log="logging"),
            "a tensor moved to 'cuda' on a CPU-only build",
        ),
        ("half", "amp-fp16-params-unscale", a(fault="amp-fp16"), "GradScaler over a model.half()"),
        (
            "embed100g",
            "setup-oom",
            a(fault="setup-oom", hidden=64),
            "a model too large for the host, refused at construction",
        ),
        (
            "lr60",
            "loss-divergence",
            a(fault="lr-spike", fail_step=8, steps=20, lr=0.02),
            "learning rate x60 at step 8: loss jumps and stays high",
        ),
        (
            "lr60_metrics",
            "loss-divergence",
            a(fault="lr-spike", fail_step=5, steps=18, lr=0.03, log="metrics", seed=3),
            "the same with trainer-style metric dicts",
        ),
        (
            "undefined_symbol",
            "extension-abi-mismatch",
            a(fault="ext-import", log="logging"),
            "importing a C++ extension built against another libtorch",
        ),
        (
            "eager",
            "dynamo-recompile-limit",
            a(fault="recompile", steps=10, log="logging"),
            "torch.compile(backend='eager') fed a new batch shape each step with recompile_limit 4",
        ),
    ]
    for name, slug, args, how in single:
        kw: dict[str, object] = {}
        if slug == "disk-full":
            kw["disk_kb"] = 200
        if slug == "too-many-open-files":
            kw["nofile"] = 64
        if slug == "host-oom-killed" and name == "cgroup":
            kw.update(cgroup_mb=300, via_bash=True)
        if slug == "dataloader-shm":
            kw["shm_kb"] = 1024
        if slug == "checkpoint-corrupt":
            kw["prepare"] = True
        add(f"single_{name}", slug, "single", args, 1, None, how, **kw)

    # --- healthy or recovered ---------------------------------------------------------------
    healthy_multi = [
        ("torchrun_w2", "torchrun", 2, a(seed=1, steps=8)),
        ("torchrun_w3_logging", "torchrun", 3, a(seed=2, steps=6, log="logging")),
        ("torchrun-tee_w2", "torchrun-tee", 2, a(seed=3, steps=8)),
        ("torchrun-role_w3", "torchrun-role", 3, a(seed=4, steps=6)),
        ("torchrun-logdir_w2", "torchrun-logdir", 2, a(seed=5, steps=6, log="logging")),
        ("torchrun-logdir-cat_w3", "torchrun-logdir-cat", 3, a(seed=6, steps=5, log="logging")),
        ("spawn_w2", "spawn", 2, a(seed=7, steps=8)),
        ("mp_w3", "mp", 3, a(seed=8, steps=6, log="metrics")),
        ("accelerate_w2", "accelerate", 2, a(seed=9, steps=6)),
        ("lightning_w2", "lightning", 2, a(seed=10, devices=2)),
        (
            "torchrun-tee_w3_skip_nonfinite_rank1",
            "torchrun-tee",
            3,
            a(fault="skip-nonfinite", fail_rank=1, fail_step=3, seed=11),
        ),
        (
            "spawn_w2_skip_nonfinite_rank0",
            "spawn",
            2,
            a(fault="skip-nonfinite", fail_rank=0, fail_step=4, seed=12),
        ),
        (
            "torchrun-logdir_w2_skip_nonfinite_rank1",
            "torchrun-logdir",
            2,
            a(fault="skip-nonfinite", fail_rank=1, fail_step=2, seed=13, log="logging"),
        ),
        (
            "torchrun_w2_ckpt_retry_rank0",
            "torchrun",
            2,
            a(fault="ckpt-retry", fail_rank=0, seed=14),
        ),
        (
            "torchrun-tee_w2_find_unused_warning",
            "torchrun-tee",
            2,
            a(fault="warn-unused", seed=15, steps=5),
        ),
        ("spawn_w2_port_fallback", "spawn", 2, a(seed=16, steps=5)),
        ("torchrun-tee_w2_workers_warning", "torchrun-tee", 2, a(seed=17, steps=4, workers=3)),
        ("torchrun-logdir-cat_w2", "torchrun-logdir-cat", 2, a(seed=18, steps=6, log="logging")),
        ("torchrun-role_w2_logging", "torchrun-role", 2, a(seed=19, steps=5, log="logging")),
        ("spawn_w3_metrics", "spawn", 3, a(seed=20, steps=5, log="metrics")),
        ("torchrun_w4", "torchrun", 4, a(seed=21, steps=4)),
    ]
    for name, launcher, w, args in healthy_multi:
        how = "finishes normally"
        if "skip_nonfinite" in name:
            how = "one rank's batch has a nan; the ranks agree by all-reduce to skip that batch everywhere and training finishes"
        elif "ckpt_retry" in name:
            how = "rank 0 resumes while the checkpoint is still being written; the first read fails, a retry succeeds"
        elif "find_unused" in name:
            how = "find_unused_parameters=True with no unused parameter: DDP's warning, training finishes"
        elif "port_fallback" in name:
            how = "the preferred master port is taken; the launcher moves to the next port and training finishes"
        elif "workers_warning" in name:
            how = "3 DataLoader workers per rank on a 2-core machine: PyTorch warns, training finishes"
        add(f"{name}", "none", launcher, args, w, None, how, occupy_port="port_fallback" in name)
    healthy_single = [
        ("plain", a(seed=21, steps=10)),
        ("logging", a(seed=22, steps=8, log="logging")),
        ("metrics", a(seed=23, steps=12, log="metrics")),
        ("big_hidden", a(seed=24, steps=6, hidden=128, batch=16)),
        ("workers2", a(seed=25, steps=6, workers=2)),
        ("workers4_warning", a(seed=26, steps=4, workers=4, log="logging")),
        ("skip_nonfinite", a(fault="skip-nonfinite", fail_step=3, seed=27)),
        ("skip_nonfinite_logging", a(fault="skip-nonfinite", fail_step=5, seed=28, log="logging")),
        ("ckpt_retry", a(fault="ckpt-retry", seed=29)),
        (
            "ckpt_retry_traceback",
            a(fault="ckpt-retry", variant="traceback", seed=30, log="logging"),
        ),
        ("target_size_warning", a(fault="warn-target", seed=31, steps=6)),
        ("target_size_warning_metrics", a(fault="warn-target", seed=32, steps=6, log="metrics")),
        ("lr_small", a(seed=33, steps=10, lr=0.001)),
        ("seed34", a(seed=34, steps=7, features=24)),
        ("seed35_vocab", a(seed=35, steps=7, vocab=500)),
        ("lightning_single", a(seed=36, devices=1)),
        ("lightning_single_seed1", a(seed=1, devices=1, steps=6)),
        ("classes9", a(seed=37, steps=5, classes=9)),
        ("world1_logging_long", a(seed=38, steps=20, log="logging", batch=4)),
        ("batch32", a(seed=39, steps=5, batch=32)),
        ("seed40_short", a(seed=40, steps=3)),
        ("accelerate_single", a(seed=41, steps=5)),
        ("mp_single", a(seed=42, steps=5)),
        ("skip_nonfinite_metrics", a(fault="skip-nonfinite", fail_step=2, seed=43, log="metrics")),
        ("ckpt_retry_metrics", a(fault="ckpt-retry", seed=44, log="metrics")),
    ]
    for name, args in healthy_single:
        launcher = "lightning" if name.startswith("lightning") else "single"
        how = "finishes normally"
        if "skip_nonfinite" in name:
            how = "a nan batch is skipped with a warning and training finishes"
        elif "ckpt_retry" in name:
            how = "the checkpoint is still being written; the first read fails, a retry succeeds"
        elif "warning" in name:
            how = "PyTorch warns (not a failure) and training finishes"
        if name == "accelerate_single":
            args += a(stack="accelerate")
        nprocs = 1
        if name == "mp_single":
            launcher = "mp"
        add(f"single_{name}", "none", launcher, args, nprocs, None, how)
    return s


@contextlib.contextmanager
def occupied_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("", 0))
    sock.listen(1)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def memory_cgroup(mb: int) -> Iterator[str]:
    path = f"/sys/fs/cgroup/memory/realruns_{os.getpid()}"
    os.mkdir(path)
    try:
        Path(path, "memory.limit_in_bytes").write_text(str(mb * 1024 * 1024))
        yield path
    finally:
        for _ in range(20):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.5)


def command(sc: Scenario, workdir: str, port: int, logdir: str) -> list[str]:
    prog = str(PROGRAMS / sc.program)
    py = str(BIN / "python")
    torchrun = [str(BIN / "torchrun"), f"--nproc-per-node={sc.nprocs}"]
    if sc.launcher in ("single", "lightning"):
        return [py, prog]
    if sc.launcher in ("spawn", "mp"):
        extra = ["--probe-port"] if "port_fallback" in sc.name else []
        return [
            py,
            str(PROGRAMS / "launch.py"),
            f"--launcher={sc.launcher}",
            f"--nprocs={sc.nprocs}",
            f"--master-port={port}",
            *extra,
        ]
    if sc.launcher == "accelerate":
        return [
            str(BIN / "accelerate"),
            "launch",
            "--multi_gpu",
            f"--num_processes={sc.nprocs}",
            "--num_machines=1",
            "--mixed_precision=no",
            "--dynamo_backend=no",
            f"--main_process_port={port}",
            prog,
            "--stack=accelerate",
        ]
    if sc.launcher == "torchrun-c10d":
        return [
            str(BIN / "torchrun"),
            "--nnodes=2",
            "--nproc-per-node=2",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            "--rdzv-id=job7",
            "--rdzv-conf=join_timeout=8",
            prog,
        ]
    torchrun.append(f"--master-port={port}")
    if sc.launcher == "torchrun-tee":
        torchrun.append("--tee=3")
    elif sc.launcher == "torchrun-role":
        torchrun += ["--role=trainer", "--tee=3"]
    elif sc.launcher.startswith("torchrun-logdir"):
        torchrun += [f"--log-dir={logdir}", "--redirects=3"]
    return [*torchrun, prog]


def wrap(sc: Scenario, cmd: list[str], workdir: str) -> list[str]:
    mounts = []
    if sc.shm_kb:
        mounts.append(f"mount -t tmpfs -o size={sc.shm_kb}k tmpfs /dev/shm")
    if sc.disk_kb:
        mounts.append(f"mount -t tmpfs -o size={sc.disk_kb}k tmpfs {workdir}")
    if sc.via_bash:
        # a second command keeps bash from exec-ing the program, so bash reports how it died
        cmd = ["bash", "-c", shlex.join(cmd) + "; exit $?"]
    if not mounts:
        return cmd
    return [
        "unshare",
        "-m",
        "--propagation=private",
        "sh",
        "-c",
        " && ".join(mounts) + ' && exec "$@"',
        "sh",
        *cmd,
    ]


def rank_files(logdir: str, nprocs: int) -> list[tuple[str, str]]:
    out = []
    for rank in range(nprocs):
        for path in sorted(glob.glob(f"{logdir}/**/attempt_*/{rank}/*.log", recursive=True)):
            text = Path(path).read_text(errors="replace")
            if text:
                out.append((path, text))
    return out


def run(sc: Scenario) -> tuple[str, int, bool]:
    """Returns the captured log, the exit code and whether the timeout hit."""
    base = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    workdir = os.path.join(base, "work")
    logdir = os.path.join(base, "logs")
    os.makedirs(workdir)
    args_extra = [f"--workdir={workdir}"] if sc.program == "train.py" else []
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TERM")}
    env.update(
        {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}, **sc.env
    )
    env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"

    def limits() -> None:
        if sc.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (sc.nofile, sc.nofile))

    with contextlib.ExitStack() as stack:
        port = stack.enter_context(occupied_port()) if sc.occupy_port else free_port()
        extra = list(args_extra)
        if sc.cgroup_mb:
            extra.append(f"--cgroup={stack.enter_context(memory_cgroup(sc.cgroup_mb))}")
        sc_args = Scenario(**{**sc.__dict__, "args": sc.args + extra})
        if sc.prepare:
            subprocess.run(
                [str(BIN / "python"), str(PROGRAMS / "train.py"), "--prepare", *sc_args.args],
                cwd=workdir,
                env=env,
                check=True,
                capture_output=True,
                timeout=60,
            )
        env["REALRUNS_ARGS"] = shlex.join(sc_args.args)
        cmd = wrap(sc, command(sc_args, workdir, port, logdir), workdir)
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=limits,
        )
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=sc.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        text = out.decode("utf-8", errors="replace")
        if sc.launcher.startswith("torchrun-logdir"):
            files = rank_files(logdir, sc.nprocs)
            if sc.launcher == "torchrun-logdir":
                # as `tail -n +1 logs/*/attempt_0/*/stderr.log` prints them, then the launcher's output
                text = "".join(f"==> {p} <==\n{t}\n" for p, t in files) + text
            else:
                text = "".join(t for _, t in files)
        print(f"   {time.monotonic() - started:5.1f} s rc={proc.returncode}", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return text, proc.returncode, timed_out


def can(sc: Scenario) -> str:
    """Why this machine cannot run the scenario, or ''."""
    if (sc.shm_kb or sc.disk_kb) and subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
    ).returncode:
        return "needs root to mount a tmpfs (unshare -m)"
    if sc.cgroup_mb and not os.access("/sys/fs/cgroup/memory", os.W_OK):
        return "needs a writable cgroup v1 memory controller"
    return ""


def fresh_scenarios() -> list[Scenario]:
    """Runs of one kind of evidence produced after the engine learnt that kind, as a check of the
    kind rather than of the files it was learnt from (issue 32: one rank dies of a crash signal
    of its own, printing nothing, and the others only lose their peer). Written to corpus/fresh/
    (`--fresh`), never to dev or sealed, and scored apart by `make eval`."""
    s = []
    for launcher, w, r, variant in [
        ("torchrun", 3, 1, "segv"),
        ("torchrun-role", 4, 3, "bus"),
        ("torchrun-logdir", 3, 0, "segv"),
        ("accelerate", 2, 1, "segv"),
        ("spawn", 3, 2, "segv"),
        ("torchrun-tee", 4, 1, "fpe"),
    ]:
        s.append(
            Scenario(
                f"elastic-child-failed__fresh_{launcher}_w{w}_rank{r}_{variant}",
                "elastic-child-failed",
                launcher,
                a(
                    fault="child-exit",
                    variant=variant,
                    fail_rank=r,
                    fail_step=3,
                    log="logging" if "logdir" in launcher else "print",
                ),
                w,
                r,
                f"rank {r} dies of SIG{variant.upper()} at step 3, printing nothing; the others "
                "lose their peer",
                expect=E["elastic-child-failed"],
            )
        )
    return s


# --- round 2: new variants drawn by a rule, for a second blind check (corpus/sealed2/) --------
# (fault, variants, slug, launchers it runs under): one rank breaks, the others die collaterally.
ROUND2_RANKED: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
    ("shape", ("linear", "view"), "shape-mismatch", (*LAUNCHERS[1:6], "spawn", "mp", "accelerate")),
    ("dtype", ("",), "dtype-mismatch", (*LAUNCHERS[1:6], "spawn", "mp", "accelerate")),
    ("device", ("",), "device-mismatch", (*LAUNCHERS[1:6], "spawn", "mp", "accelerate")),
    ("embedding", ("",), "embedding-index-out-of-range", (*LAUNCHERS[1:6], "spawn", "mp")),
    ("nan", ("raise",), "nan-loss", (*LAUNCHERS[1:6], "spawn", "mp")),
    ("anomaly", ("",), "anomaly-nan-backward", (*LAUNCHERS[1:6], "spawn", "mp")),
    ("backward-twice", ("",), "backward-twice", (*LAUNCHERS[1:6], "spawn", "accelerate")),
    ("inplace", ("",), "inplace-modification", (*LAUNCHERS[1:6], "mp")),
    ("no-grad", ("",), "no-grad-fn", (*LAUNCHERS[1:6], "spawn", "mp", "accelerate")),
    ("collate", ("workers0", "workers1"), "collate-size-mismatch", (*LAUNCHERS[1:6], "spawn")),
    ("worker-killed", ("9", "11", "6"), "dataloader-worker-died", (*LAUNCHERS[1:6], "mp")),
    ("collective", ("numel", "op"), "collective-mismatch", (*LAUNCHERS[1:6], "mp")),
    ("gloo-hang", ("",), "gloo-timeout", ("torchrun-role", "torchrun-logdir-cat", "mp")),
    ("unused", ("",), "ddp-unused-parameters", (*LAUNCHERS[1:6], "mp", "accelerate")),
    ("ready-twice", ("",), "ddp-ready-twice", (*LAUNCHERS[1:6], "spawn", "mp")),
    ("child-exit", ("1", "3", "abort"), "elastic-child-failed", (*LAUNCHERS[1:6], "accelerate")),
    ("oom-kill", ("",), "host-oom-killed", (*LAUNCHERS[1:6], "mp")),
    ("open-files", ("",), "too-many-open-files", (*LAUNCHERS[1:6], "spawn")),
]
# every rank fails the same way (no initiating rank): (fault, variants, slug, launchers)
ROUND2_ALL: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
    (
        "state-dict",
        ("", "missing", "ddp-prefix"),
        "state-dict-mismatch",
        (*LAUNCHERS[1:6], "spawn"),
    ),
    ("ckpt-corrupt", ("truncated", "empty", "garbage"), "checkpoint-corrupt", LAUNCHERS[1:6]),
    ("cuda", ("", "nccl", "to"), "cuda-not-available", (*LAUNCHERS[1:6], "mp")),
    ("amp-fp16", ("",), "amp-fp16-params-unscale", (*LAUNCHERS[1:6], "spawn")),
    ("setup-oom", ("",), "setup-oom", (*LAUNCHERS[1:6], "mp")),
    ("ext-import", ("",), "extension-abi-mismatch", (*LAUNCHERS[1:6], "spawn")),
    ("lr-spike", ("",), "loss-divergence", (*LAUNCHERS[1:6], "spawn")),
]
ROUND2_SINGLE: list[tuple[str, tuple[str, ...], str]] = [
    ("shape", ("linear", "view"), "shape-mismatch"),
    ("dtype", ("",), "dtype-mismatch"),
    ("embedding", ("",), "embedding-index-out-of-range"),
    ("nan", ("raise", ""), "nan-loss"),
    ("inplace", ("",), "inplace-modification"),
    ("state-dict", ("", "missing", "ddp-prefix"), "state-dict-mismatch"),
    ("worker-killed", ("9", "11"), "dataloader-worker-died"),
    ("collate", ("workers0", "workers2"), "collate-size-mismatch"),
]
# a healthy run: (fault, how)
ROUND2_HEALTHY: list[tuple[str, str]] = [
    ("none", "finishes normally"),
    ("none", "finishes normally"),
    ("none", "finishes normally"),
    (
        "skip-nonfinite",
        "a nan batch is skipped (by every rank when there are several) and training finishes",
    ),
    ("ckpt-retry", "the checkpoint is still being written; the first read fails, a retry succeeds"),
    (
        "warn-unused",
        "find_unused_parameters=True with no unused parameter: DDP's warning, training finishes",
    ),
    (
        "workers",
        "3 DataLoader workers per process on a 2-core machine: PyTorch warns, training finishes",
    ),
    ("warn-target", "an MSE target size warning (not a failure), training finishes"),
]


# The launchers under which every rank's own traceback reaches the log. torch.multiprocessing.spawn
# is not one: its parent reports the one exception it took first and stops the other processes.
EVERY_RANK_RAISES = frozenset(LAUNCHERS[1:7]) | {"mp", "accelerate", "lightning"}
# A drawn or listed scenario's name: "<slug>__<launcher>_w<world size>_..." (rounds 1-10).
_NAME_RE = re.compile(r"^(?P<slug>[a-z0-9-]+)__(?P<launcher>[a-z0-9-]+)_w(?P<world>\d+)_")


def mirrored_mismatch(slug: str, launcher: str, nprocs: int) -> bool:
    """A collective mismatch between two ranks whose log holds both ranks' reports: the rank
    that breaks calls a collective of its own at the step the other calls the usual one, both
    raise at once with the mirror image of one report ("Rank 0 is running X, but Rank 1 is
    running Y" and the converse), within milliseconds, and the elastic agent's Root Cause is
    the first exit it polled. Nothing in such a log says which rank left the common sequence (with
    three ranks or more the others agree, and the odd one is decided), so its label's rank
    (the rank the scenario broke) is not one the log can decide."""
    return slug == "collective-mismatch" and nprocs == 2 and launcher in EVERY_RANK_RAISES


def rank_decidable(name: str) -> bool:
    """Whether the log of the scenario of this name (a corpus file's `run-<name>.log`, or the
    name alone) can decide its initiating rank: the rule `mirrored_mismatch` over the structure
    the name states, never over which runs an engine missed."""
    m = _NAME_RE.match(name.removeprefix("run-"))
    if m is None:
        return True
    return not mirrored_mismatch(m.group("slug"), m.group("launcher"), int(m.group("world")))


def existing_names(corpus: Path = CORPUS) -> set[str]:
    """The scenario names of the first round: the code's lists and the labels in corpus/."""
    names = {sc.name for sc in scenarios() + fresh_scenarios()}
    for part in ("dev", "sealed", "fresh"):
        path = corpus / part / "labels.jsonl"
        if path.is_file():
            for line in path.read_text().splitlines():
                file = json.loads(line)["file"]
                names.add(file.removeprefix("run-").removesuffix(".log"))
    return names


def _key(sc: Scenario) -> tuple[str, str, str, str, int, int | None, str]:
    """What makes two scenarios the same variant: class, fault and its variant, launcher, world
    size, rank, and for one process (where those are few) the log style."""
    args = dict(zip(sc.args[::2], sc.args[1::2], strict=False))
    fault = args.get("--fault", "none")
    variant = args.get("--variant", "") or ("linear" if fault == "shape" else "")
    log = args.get("--log", "print") if sc.nprocs == 1 else ""
    return (sc.slug, fault, variant, sc.launcher, sc.nprocs, sc.initiating_rank, log)


def round2_scenarios(
    seed: int = 2,
    exclude: set[str] | None = None,
    ranked: int = 22,
    every_rank: int = 6,
    single: int = 5,
    healthy: int = 9,
) -> list[Scenario]:
    """Genuinely new variants of the first round's families, drawn from a seeded RNG: launcher,
    world size (2-4), failing rank, step, seed, log style and variant are drawn, and a draw whose
    name is in `exclude` (default: existing_names()) or whose (class, launcher, world size, rank,
    variant) is one of the first round's is drawn again. Written to corpus/sealed2/ (`--round 2`),
    a second blind part nobody has read. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(2, [], seed, exclude, ROUND2_RANKED, counts)


# Round 3 (issue 32): the round-2 families, and a rank that dies of a crash signal of its own
# (SIGSEGV, SIGBUS, SIGFPE, as corpus/fresh) besides exit codes and abort, under spawn too.
ROUND3_RANKED = [
    (
        (fault, ("1", "3", "abort", "segv", "bus", "fpe"), slug, (*launchers, "spawn"))
        if fault == "child-exit"
        else (fault, variants, slug, launchers)
    )
    for fault, variants, slug, launchers in ROUND2_RANKED
]


def round3_scenarios(
    seed: int = 3,
    exclude: set[str] | None = None,
    ranked: int = 56,
    every_rank: int = 6,
    single: int = 4,
    healthy: int = 8,
) -> list[Scenario]:
    """Development runs (and a third blind part) weighted to multi-rank logs where one rank breaks
    first: drawn like round 2 with a seed of its own, and never one of round 1's or round 2's
    names or combinations. `--round 3` writes them to corpus/dev_r3/, open, and the third of them
    `sealed()` picks to corpus/sealed3/, blind. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(3, round2_scenarios(), seed, exclude, ROUND3_RANKED, counts)


# Round 4 (issue 32): development runs only (corpus/dev_r4/, open; no blind part), weighted
# further to one rank breaking first. The host-OOM kill leaves mp out: under mp the kill is told
# by programs/launch.py's own report, which has no kill wording, so round 3 dropped all five.
ROUND4_RANKED = [
    (fault, variants, slug, tuple(x for x in launchers if x != "mp"))
    if fault == "oom-kill"
    else (fault, variants, slug, launchers)
    for fault, variants, slug, launchers in ROUND3_RANKED
]


def round4_scenarios(
    seed: int = 4,
    exclude: set[str] | None = None,
    ranked: int = 52,
    every_rank: int = 5,
    single: int = 3,
    healthy: int = 6,
) -> list[Scenario]:
    """Development runs drawn like round 3 with a seed of its own, never one of rounds 1-3's
    names or combinations (rounds 2 and 3 from their draws in code, not from their sealed files).
    `--round 4` writes all of them to corpus/dev_r4/, open. Deterministic for a seed and an
    exclude set."""
    earlier = _drawn_before(4)
    counts = (ranked, every_rank, single, healthy)
    return _after(4, earlier, seed, exclude, ROUND4_RANKED, counts)


def round5_scenarios(
    seed: int = 5,
    exclude: set[str] | None = None,
    ranked: int = 44,
    every_rank: int = 4,
    single: int = 2,
    healthy: int = 5,
) -> list[Scenario]:
    """Development runs drawn like round 4 with a seed of their own, never one of rounds 1-4's
    names or combinations (rounds 2-4 from their draws in code, not from a sealed part's files).
    `--round 5` writes all of them to corpus/dev_r5/, open: a third first look for the
    calibration. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(5, _drawn_before(5), seed, exclude, ROUND4_RANKED, counts)


# Round 6 (issue 32): development runs (corpus/dev_r6/, open) and a fourth blind part
# (corpus/sealed4/), weighted further still to one rank breaking first. The host-OOM kill leaves
# `torchrun-logdir-cat` out too: `cat` of the rank files has no kill wording (rounds 2 and 4
# dropped it there).
ROUND6_RANKED = [
    (fault, variants, slug, tuple(x for x in launchers if x != "torchrun-logdir-cat"))
    if fault == "oom-kill"
    else (fault, variants, slug, launchers)
    for fault, variants, slug, launchers in ROUND4_RANKED
]


def sealed4(name: str) -> bool:
    """Round 6's blind half (corpus/sealed4/), fixed by the name alone: a hash of its own, so the
    split is not `sealed()`'s third."""
    return int(hashlib.sha256(f"sealed4:{name}".encode()).hexdigest(), 16) % 2 == 0


def round6_scenarios(
    seed: int = 6,
    exclude: set[str] | None = None,
    ranked: int = 60,
    every_rank: int = 4,
    single: int = 0,
    healthy: int = 6,
) -> list[Scenario]:
    """Runs drawn like round 5 with a seed of their own, never one of rounds 1-5's names or
    combinations (rounds 2-5 from their draws in code, not from a sealed part's files). `--round 6`
    writes the half `sealed4()` picks to corpus/sealed4/, blind, and the rest to corpus/dev_r6/,
    open. No single process: rounds 2-5 drew every single-process combination there is.
    Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(6, _drawn_before(6), seed, exclude, ROUND6_RANKED, counts)


def round7_scenarios(
    seed: int = 7,
    exclude: set[str] | None = None,
    ranked: int = 42,
    every_rank: int = 11,
    single: int = 0,
    healthy: int = 17,
) -> list[Scenario]:
    """Runs drawn as sealed2 was (round 2's families, launchers and variants, the launcher drawn
    among a family's launchers, so the torchrun forms come five to one), with a seed of their own,
    never one of rounds 1-6's names or combinations (rounds 2-6 from their draws in code, not
    from a sealed part's files), weighted as round 2 was: its 22 runs where one rank breaks first,
    6 alike and 9 healthy scaled to 70 (no single process: rounds 2-5 drew every single-process
    combination there is). `--round 7` writes all of them to
    corpus/dev_r7/, open: runs like sealed2's to learn from without reading sealed2.
    Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(7, _drawn_before(7), seed, exclude, ROUND2_RANKED, counts, like=2)


# Round 8 (issue 32): drawn as sealed2 was, like round 7, and split by a hash of its own into an
# open half (corpus/dev_r8/) and a fifth blind part (corpus/sealed5/), made before sealed2 is read
# (its owner then reads it, and it stops being blind).
def sealed5(name: str) -> bool:
    """Round 8's blind half (corpus/sealed5/), fixed by the name alone: a hash of its own, not
    `sealed()`'s third nor `sealed4()`'s half."""
    return int(hashlib.sha256(f"sealed5:{name}".encode()).hexdigest(), 16) % 2 == 0


def round8_scenarios(
    seed: int = 8,
    exclude: set[str] | None = None,
    ranked: int = 54,
    every_rank: int = 14,
    single: int = 0,
    healthy: int = 22,
) -> list[Scenario]:
    """Runs drawn as sealed2 was (as round 7: round 2's families, launchers and variants, the
    launcher among a family's launchers), with a seed of their own, never one of rounds 1-7's
    names or combinations (rounds 2-7 from their draws in code, not from a sealed part's files),
    weighted as round 2 was (22 where one rank breaks first, 6 alike, 9 healthy, scaled to 90; no
    single process). `--round 8` writes the half `sealed5()` picks to corpus/sealed5/, blind, and
    the rest to corpus/dev_r8/, open. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(8, _drawn_before(8), seed, exclude, ROUND2_RANKED, counts, like=2)


# Round 9 (issue 32): drawn as sealed2 was, like rounds 7 and 8, all open (corpus/dev_r9/); no
# blind part this round.
def round9_scenarios(
    seed: int = 9,
    exclude: set[str] | None = None,
    ranked: int = 42,
    every_rank: int = 10,
    single: int = 0,
    healthy: int = 14,
) -> list[Scenario]:
    """Runs drawn as sealed2 was (as rounds 7 and 8: round 2's families, launchers and variants,
    the launcher among a family's launchers), with a seed of their own, never one of rounds 1-8's
    names or combinations (rounds 2-8 from their draws in code, not from a sealed part's files),
    weighted to runs where one rank breaks first (42, with 10 alike and 14 healthy; no single
    process), cut to 66 to fit the time the shared machine had. `--round 9` writes all of them to
    corpus/dev_r9/, open. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(9, _drawn_before(9), seed, exclude, ROUND2_RANKED, counts, like=2)


# Round 10 (issue 32): drawn as sealed2 was (a family's launchers, like=2) over round 6's families,
# where the rank that ends without a traceback dies of a crash signal (SIGSEGV, SIGBUS, SIGFPE) as
# well as exit codes 1 and 3 and abort, under spawn too, and the host-OOM kill leaves out the
# launchers whose logs have no kill wording. That family is listed twice, so a rank dying with no
# traceback comes twice as often as each other family. Split by a hash of its own into an open
# half (corpus/dev_r10/) and a sixth blind part (corpus/sealed6/).
ROUND10_RANKED = [
    *ROUND6_RANKED,
    *(family for family in ROUND6_RANKED if family[0] == "child-exit"),
]


def sealed6(name: str) -> bool:
    """Round 10's blind half (corpus/sealed6/), fixed by the name alone: a hash of its own, not
    `sealed()`'s third nor `sealed4()`'s or `sealed5()`'s half."""
    return int(hashlib.sha256(f"sealed6:{name}".encode()).hexdigest(), 16) % 2 == 0


def round10_scenarios(
    seed: int = 10,
    exclude: set[str] | None = None,
    ranked: int = 54,
    every_rank: int = 8,
    single: int = 0,
    healthy: int = 12,
) -> list[Scenario]:
    """Runs drawn as sealed2 was (the launcher among a family's launchers, so the torchrun forms
    come five to one) over `ROUND10_RANKED` (crash signals and spawn for the rank that ends
    without a traceback, drawn twice as often), with a seed of their own, never one of rounds
    1-9's names or combinations (rounds 2-9 from their draws in code, not from a sealed part's
    files), weighted to runs where one rank breaks first (54, with 8 alike and 12 healthy; no
    single process). `--round 10` writes the half `sealed6()` picks to corpus/sealed6/, blind,
    and the rest to corpus/dev_r10/, open. Deterministic for a seed and an exclude set."""
    counts = (ranked, every_rank, single, healthy)
    return _after(10, _drawn_before(10), seed, exclude, ROUND10_RANKED, counts, like=2)


def _drawn_before(round_no: int) -> list[Scenario]:
    """Every seeded round's draw before `round_no` (rounds 2 to round_no - 1), in order."""
    rounds = (
        round2_scenarios,
        round3_scenarios,
        round4_scenarios,
        round5_scenarios,
        round6_scenarios,
        round7_scenarios,
        round8_scenarios,
        round9_scenarios,
    )
    return [sc for draw in rounds[: round_no - 2] for sc in draw()]


def _after(
    round_no: int,
    earlier: list[Scenario],
    seed: int,
    exclude: set[str] | None,
    ranked_families: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]],
    counts: tuple[int, int, int, int],
    like: int | None = None,
) -> list[Scenario]:
    """A round drawn after round 1 and the seeded rounds `earlier`: none of their names (nor
    `exclude`'s, by default existing_names()) and none of their combinations (`_key`); `like`
    is the round whose launcher rule it draws by (its own by default)."""
    taken = existing_names() if exclude is None else set(exclude)
    taken |= {sc.name for sc in earlier}
    prior = {_key(sc) for sc in scenarios() + fresh_scenarios() + earlier}
    return _drawn(round_no, seed, taken, prior, ranked_families, counts, like or round_no)


def _drawn(
    round_no: int,
    seed: int,
    taken: set[str],
    first_keys: set[tuple[str, str, str, str, int, int | None, str]],
    ranked_families: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]],
    counts: tuple[int, int, int, int],
    like: int,
) -> list[Scenario]:
    """The draw of round 2 and later rounds: `counts` runs where one rank breaks, where every rank
    fails alike, of one process, and healthy, each accepted only when its name is not in `taken`
    and its `_key` is neither in `first_keys` nor already drawn. `like` is the round whose
    launcher rule is drawn by (2: among a family's launchers)."""
    import itertools
    import random

    ranked, every_rank, single, healthy = counts
    rng = random.Random(seed)
    out: list[Scenario] = []
    # the programs' seeds: 200-999 in round 2, 1000-1799 in round 3, 2000-2799 in round 4,
    # 3000-3799 in round 5, 4000-4999 in round 6, 5000-5999 in round 7, 6000-6999 in round 8,
    # 7000-7999 in round 9, 8000-8999 in round 10 (none used in round 1; rounds 6-10 take their whole thousand: their exclusions reject more
    # draws still)
    low = 200 if round_no == 2 else 1000 * (round_no - 2)
    width = 1000 if round_no >= 6 else 800
    first = rng.sample(range(low, low + width), 200)
    # past those 200 (round 5's exclusions reject more draws), the rest of the range in order:
    # no further call on rng, so a draw that never ran out is what it always was
    seeds = itertools.chain(first, sorted(set(range(low, low + width)) - set(first)))
    tag_round = f"round {round_no}"

    def accept(sc: Scenario) -> bool:
        if len(taken) > 100_000:
            raise RuntimeError(f"{tag_round}: no new combination left to draw")
        taken.add(f"#draw{len(taken)}")
        if sc.name in taken or _key(sc) in first_keys or any(_key(o) == _key(sc) for o in out):
            return False
        out.append(sc)
        taken.add(sc.name)
        return True

    def log_style(launcher: str) -> str:
        return (
            "logging"
            if launcher.startswith("torchrun-logdir")
            else rng.choice(("print", "logging"))
        )

    def pick(launchers: tuple[str, ...]) -> str:
        """Round 2 (and rounds 7-9, drawn like it) draws among a family's launchers; rounds 3-6
        draw torchrun (any of its forms) as often as each of spawn, mp and accelerate, which the
        torchrun forms outnumbered."""
        if like == 2:
            return rng.choice(launchers)
        forms = [name for name in launchers if name.startswith("torchrun")]
        kinds = [name for name in launchers if not name.startswith("torchrun")]
        kind = rng.choice([*kinds, "torchrun"] if forms else kinds)
        return rng.choice(forms) if kind == "torchrun" else kind

    families = list(ranked_families)
    rng.shuffle(families)
    wanted = len(out) + ranked
    i = 0
    while len(out) < wanted:
        fault, variants, slug, launchers = families[i % len(families)]
        i += 1
        launcher, variant = pick(launchers), rng.choice(variants)
        w = rng.randint(2, 4)
        r = rng.randrange(w)
        step = rng.randint(2, 6)
        kw: dict[str, object] = {"expect": E[slug]}
        extra = a(hidden=rng.choice((16, 24, 32, 48)))
        if fault == "collate":
            extra += a(workers=int(variant.removeprefix("workers")))
        elif fault == "worker-killed":
            extra += a(workers=1)
        elif fault == "collective":
            kw["env"] = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
        elif fault == "gloo-hang":
            extra += a(pg_timeout=6)
            kw["timeout"] = 90
        elif fault == "unused":
            extra += a(pg_timeout=20)
        elif fault == "oom-kill":
            kw["cgroup_mb"] = 300
        elif fault == "open-files":
            step, kw["nofile"] = 1, 64
        if fault == "embedding":
            extra += a(vocab=rng.choice((40, 60, 80)))
        pv = variant if fault not in ("collate",) and variant else ""
        args = (
            a(
                fault=fault,
                **({"variant": pv} if pv else {}),
                fail_rank=r,
                fail_step=step,
                seed=next(seeds),
                log=log_style(launcher),
            )
            + extra
        )
        tag = f"_{variant}" if variant else ""
        sc = Scenario(
            f"{slug}__{launcher}_w{w}_rank{r}{tag}_step{step}",
            slug,
            launcher,
            args,
            w,
            r,
            f"{tag_round}: rank {r} of {w} breaks ({fault}{' ' + variant if variant else ''})"
            f" at step {step}; the others are left waiting or lose their peer",
            **kw,  # type: ignore[arg-type]
        )
        accept(sc)
    wanted = len(out) + every_rank
    groups = list(ROUND2_ALL)
    rng.shuffle(groups)
    i = 0
    while len(out) < wanted:
        fault, variants, slug, launchers = groups[i % len(groups)]
        i += 1
        launcher, variant = rng.choice(launchers), rng.choice(variants)
        w = rng.randint(2, 4)
        extra = a(hidden=64) if fault == "setup-oom" else []
        if fault == "lr-spike":
            extra = a(fail_step=rng.randint(5, 8), steps=16, lr=0.02)
        args = (
            a(
                fault=fault,
                **({"variant": variant} if variant else {}),
                fail_rank=-1,
                seed=next(seeds),
                log=log_style(launcher),
            )
            + extra
        )
        tag = f"_{variant}" if variant else ""
        accept(
            Scenario(
                f"{slug}__{launcher}_w{w}_all{tag}",
                slug,
                launcher,
                args,
                w,
                None,
                f"{tag_round}: every rank of {w} fails the same way ({fault}{' ' + variant if variant else ''})",
                expect=E[slug],
                prepare=fault == "ckpt-corrupt",
            )
        )
    wanted = len(out) + single
    singles = list(ROUND2_SINGLE)
    rng.shuffle(singles)
    i = 0
    while len(out) < wanted:
        fault, variants, slug = singles[i % len(singles)]
        i += 1
        variant = rng.choice(variants)
        step = rng.randint(2, 6)
        log = (
            rng.choice(("print", "logging", "metrics"))
            if fault == "nan" and not variant
            else rng.choice(("print", "logging"))
        )
        extra = a(workers=int(variant.removeprefix("workers"))) if fault == "collate" else []
        if fault == "worker-killed":
            extra = a(workers=rng.choice((1, 2)))
        pv = variant if fault != "collate" and variant else ""
        args = (
            a(
                fault=fault,
                **({"variant": pv} if pv else {}),
                fail_step=step,
                seed=next(seeds),
                log=log,
            )
            + extra
        )
        tag = f"_{variant}" if variant else ""
        accept(
            Scenario(
                f"{slug}__single_{fault}{tag}_{log}_step{step}",
                slug,
                "single",
                args,
                1,
                None,
                f"{tag_round}: one process, {fault}{' ' + variant if variant else ''} at step {step}",
                expect=E[slug],
            )
        )
    wanted = len(out) + healthy
    i = 0
    while len(out) < wanted:
        fault, how = ROUND2_HEALTHY[i % len(ROUND2_HEALTHY)]
        i += 1
        launcher = rng.choice((*LAUNCHERS[:6], "spawn", "mp", "accelerate"))
        w = 1 if launcher == "single" else rng.randint(2, 4)
        log = (
            "logging"
            if launcher.startswith("torchrun-logdir")
            else rng.choice(("print", "logging", "metrics"))
        )
        args = a(seed=next(seeds), steps=rng.randint(4, 8), log=log)
        if fault == "workers":
            args += a(workers=3)
        elif fault != "none":
            args = a(fault=fault, fail_rank=rng.randrange(w), fail_step=rng.randint(2, 4)) + args
        accept(
            Scenario(
                f"none__{launcher}_w{w}_{fault}_{log}",
                "none",
                launcher,
                args,
                w,
                None,
                f"{tag_round}: {how}",
                expect=E["none"],
            )
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only scenarios whose name contains this")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep other scenarios' logs and labels")
    parser.add_argument(
        "--fresh", action="store_true", help="run the fresh-check scenarios into corpus/fresh/"
    )
    parser.add_argument(
        "--round",
        type=int,
        default=1,
        choices=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
        help="2: the round-2 variants (round2_scenarios) into corpus/sealed2/, a second blind part;"
        " 3: round3_scenarios into corpus/dev_r3/ (open) and corpus/sealed3/ (blind);"
        " 4: round4_scenarios into corpus/dev_r4/ (open);"
        " 5: round5_scenarios into corpus/dev_r5/ (open);"
        " 6: round6_scenarios into corpus/dev_r6/ (open) and corpus/sealed4/ (blind);"
        " 7: round7_scenarios (drawn as round 2 was) into corpus/dev_r7/ (open);"
        " 8: round8_scenarios (drawn as round 2 was) into corpus/dev_r8/ (open) and"
        " corpus/sealed5/ (blind);"
        " 9: round9_scenarios (drawn as round 2 was) into corpus/dev_r9/ (open);"
        " 10: round10_scenarios (drawn as round 2 was) into corpus/dev_r10/ (open) and"
        " corpus/sealed6/ (blind)",
    )
    args = parser.parse_args()
    # Only in .venv-realruns (bench/realruns/requirements.txt); the project's own venv, whose mypy
    # reads this file through the corpus test's import of LAUNCHERS, has no torch.
    import torch  # type: ignore[import-not-found,unused-ignore]

    version = torch.__version__
    round2, round3, round4 = args.round == 2, args.round == 3, args.round == 4
    round5, round6, round7 = args.round == 5, args.round == 6, args.round == 7
    round8, round9, round10 = args.round == 8, args.round == 9, args.round == 10
    pool = (
        fresh_scenarios()
        if args.fresh
        else round2_scenarios()
        if round2
        else round3_scenarios()
        if round3
        else round4_scenarios()
        if round4
        else round5_scenarios()
        if round5
        else round6_scenarios()
        if round6
        else round7_scenarios()
        if round7
        else round8_scenarios()
        if round8
        else round9_scenarios()
        if round9
        else round10_scenarios()
        if round10
        else scenarios()
    )
    chosen = [sc for sc in pool if args.only in sc.name]
    names = [
        sc.name
        for sc in scenarios()
        + fresh_scenarios()
        + round2_scenarios()
        + round3_scenarios()
        + round4_scenarios()
        + round5_scenarios()
        + round6_scenarios()
        + round7_scenarios()
        + round8_scenarios()
        + round9_scenarios()
        + round10_scenarios()
    ]
    assert len(names) == len(set(names)), "scenario names must be unique"

    def part(sc: Scenario) -> str:
        if round10:
            return "sealed6" if sealed6(sc.name) else "dev_r10"
        if round9:
            return "dev_r9"
        if round8:
            return "sealed5" if sealed5(sc.name) else "dev_r8"
        if round7:
            return "dev_r7"
        if round6:
            return "sealed4" if sealed4(sc.name) else "dev_r6"
        if round5:
            return "dev_r5"
        if round4:
            return "dev_r4"
        if round3:
            return "sealed3" if sealed(sc.name) else "dev_r3"
        return "sealed2" if round2 else part_of(sc, args.fresh)

    def shown(sc: Scenario) -> str:
        """A blind part's scenario is not named on the terminal (round 2's were, before this)."""
        return f"(a {part(sc)} run)" if part(sc) in BLIND else sc.name

    if args.list:
        for sc in chosen:
            print(f"{part(sc):7} {sc.launcher:20} {shown(sc)}")
        return 0
    parts = (
        ("fresh",)
        if args.fresh
        else ("sealed2",)
        if round2
        else ("dev_r3", "sealed3")
        if round3
        else ("dev_r4",)
        if round4
        else ("dev_r5",)
        if round5
        else ("dev_r6", "sealed4")
        if round6
        else ("dev_r7",)
        if round7
        else ("dev_r8", "sealed5")
        if round8
        else ("dev_r9",)
        if round9
        else ("dev_r10", "sealed6")
        if round10
        else ("dev", "sealed")
    )
    labels: dict[str, dict[str, dict]] = {name: {} for name in parts}
    for name in labels:
        (CORPUS / name).mkdir(parents=True, exist_ok=True)
        path = CORPUS / name / "labels.jsonl"
        if args.keep and path.exists():
            for line in path.read_text().splitlines():
                label = json.loads(line)
                labels[name][label["file"]] = label
        elif not args.keep:
            for old in (CORPUS / name).glob("*.log"):
                old.unlink()
    dropped = []
    started = time.monotonic()
    for i, sc in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {shown(sc)} ({sc.launcher}, {sc.nprocs} procs)", flush=True)
        reason = can(sc)
        if reason:
            dropped.append((shown(sc), reason))
            continue
        text, rc, timed_out = run(sc)
        ok = re.search(sc.expect, text) is not None and not timed_out
        if sc.slug in ("none", "loss-divergence", "dynamo-recompile-limit") and rc != 0:
            ok = False
        if (
            sc.slug != "none"
            and sc.slug not in ("loss-divergence", "dynamo-recompile-limit")
            and rc == 0
            and sc.slug != "nan-loss"
        ):
            ok = False
        if not ok:
            dropped.append(
                (shown(sc), f"did not do what it was meant to (rc={rc}, timed out={timed_out})")
            )
            if shown(sc) == sc.name:  # a blind part's output is not kept for reading
                Path(tempfile.gettempdir(), f"realruns-dropped-{sc.name}.log").write_text(text)
            continue
        file = f"run-{sc.name}.log"
        (CORPUS / part(sc) / file).write_text(text)
        labels[part(sc)][file] = {
            "file": file,
            "slug": sc.slug,
            "multi_rank": sc.multi_rank,
            "initiating_rank": sc.initiating_rank,
            "source": "bench/realruns/programs/" + sc.program + " " + " ".join(sc.args),
            "launcher": sc.launcher,
            "nprocs": sc.nprocs,
            "torch": version,
            "stack": {"accelerate": "accelerate", "lightning": "lightning"}.get(
                sc.launcher, "pytorch"
            ),
            "how": sc.how,
        }
    for name, by_file in labels.items():
        lines = [json.dumps(by_file[f]) for f in sorted(by_file)]
        (CORPUS / name / "labels.jsonl").write_text("".join(line + "\n" for line in lines))
    print(
        f"done in {time.monotonic() - started:.0f} s; "
        + ", ".join(f"{name} {len(by_file)}" for name, by_file in labels.items())
    )
    for name, reason in dropped:
        print(f"DROPPED {name}: {reason}")
    return 1 if dropped and not args.only else 0


if __name__ == "__main__":
    sys.exit(main())
