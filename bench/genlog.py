"""A synthetic, realistic distributed-training log of any size, streamed.

Written for benchmarks and tests: torchrun banners, per-rank step lines, tqdm redraws with \\r,
checkpoint saves under a home directory, wandb and NCCL INFO lines with host names and IPs,
a few planted secrets, and a real-looking failure at the end (CUDA OOM on one rank, NCCL
watchdog timeouts on the others).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Iterator

_BLOCK = 64 * 1024
_USER = "jdoe"
_HOME = f"/home/{_USER}"
_SITE = f"{_HOME}/miniconda3/envs/train/lib/python3.10/site-packages"


def _hosts(ranks: int) -> list[str]:
    return [f"gpu-node-{i // 2 + 1:02d}" for i in range(ranks)]


def _ips(ranks: int) -> list[str]:
    return [f"10.12.{i // 2}.{17 + i // 2}" for i in range(ranks)]


def _header(rng: random.Random, ranks: int) -> list[str]:
    hosts = _hosts(ranks)
    ips = _ips(ranks)
    w = "W1130 23:13:03.743000 18801 torch/distributed/run.py:874]"
    lines = [
        f"{w} ",
        f"{w} *****************************************",
        f"{w} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default.",
        f"{w} *****************************************",
        f"SLURM_JOB_ID=48213 SLURM_JOB_USER={_USER} SLURM_NODELIST=gpu-node-[01-02]",
        f"MASTER_ADDR={hosts[0]}.cluster.example.com MASTER_PORT=29500 WORLD_SIZE={ranks}",
        f"hostname={hosts[0]}",
        "wandb: Currently logged in as: jdoe (jdoe-lab). Use `wandb login --relogin` to force",
        "wandb: Tracking run with wandb version 0.16.3",
        f"wandb: Run data is saved locally in {_HOME}/runs/llama-ft/wandb/run-20261130_231305",
        "wandb: 🚀 View run at https://wandb.ai/jdoe-lab/llama-ft/runs/a1b2c3d4",
    ]
    for r in range(ranks):
        pid = 18802 + r
        p = f"[default{r}]:{hosts[r]}:{pid}:{pid + 97} [{r % 2}] NCCL INFO"
        lines += [
            f"{p} Bootstrap : Using ib0:{ips[r]}<0>",
            f"{p} NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:{ips[r]}<0>",
            f"{p} cudaDriverVersion 12020",
            f"{p} NCCL version 2.18.1+cuda12.1",
            f"{p} Channel 00/02 :    0   1   2   3",
            f"{p} comm 0x55d5c8a{r}e0 rank {r} nranks {ranks} cudaDev {r % 2} busId "
            f"{rng.choice(['1b000', '3d000'])} commId 0x{rng.getrandbits(64):x} - Init COMPLETE",
        ]
    lines += [
        f"{_SITE}/torch/utils/data/dataloader.py:558: UserWarning: This DataLoader will create "
        "16 worker processes in total. Our suggested max number of worker in current system is 8.",
        f"{_SITE}/transformers/training_args.py:1474: FutureWarning: `evaluation_strategy` is "
        "deprecated and will be removed in version 4.46 of 🤗 Transformers.",
        "torch 2.1.0.post1 cuda 12.1.105 cudnn 8.9.2.26 nccl 2.18.1 driver 535.104.05",
        "model: LlamaForCausalLM params=6738415616 hidden=[4096] shape=[32, 4096, 11008]",
    ]
    return lines


def _planted(rng: random.Random) -> str:
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    kind = rng.randrange(4)
    if kind == 0:
        return "export HF_TOKEN=hf_" + "".join(rng.choice(alnum) for _ in range(34))
    if kind == 1:
        key = "AKIA" + "".join(rng.choice(alnum[:26] + alnum[52:]) for _ in range(16))
        return f"boto3: using access key {key} for s3://jdoe-datasets/shards"
    if kind == 2:
        return "Reporting to jane.doe@acme-research.com on failure"
    return (
        "wandb: W&B API key is configured ("
        + "".join(rng.choice("0123456789abcdef") for _ in range(40))
        + ")"
    )


def _body_lines(rng: random.Random, ranks: int, step: int, total: int) -> list[str]:
    r = rng.randrange(ranks)
    roll = rng.random()
    stamp = f"2026-11-30 23:{(step // 60) % 60:02d}:{step % 60:02d},{rng.randrange(1000):03d}"
    if roll < 0.70:
        loss = 2.5 * (0.9995**step) + rng.random() * 0.1
        return [
            f"[rank{r}]: {stamp} | step {step}/{total} | loss {loss:.4f} "
            f"| lr {3e-4 * (0.9999**step):.3e} "
            f"| grad_norm {rng.random() * 2:.3f} | tokens/s {rng.randrange(9000, 14000)} "
            f"| mem {rng.uniform(30, 40):.2f}GB"
        ]
    if roll < 0.85:
        pct = step * 100 // total
        updates = "".join(
            f"Training: {pct:3d}%|{'█' * (pct // 10):<10}| {step + k}/{total} "
            f"[{step // 60:02d}:{step % 60:02d}<12:10:07,  {rng.uniform(1, 2):.2f}it/s, "
            f"loss={rng.uniform(1, 3):.3f}]\r"
            for k in range(3)
        )
        return [updates]
    if roll < 0.92:
        h = _hosts(ranks)[r]
        return [
            f"{h}:{18802 + r}:{18899 + r} [{r % 2}] NCCL INFO Channel {rng.randrange(4):02d}/0 : "
            f"{r}[{r % 2}] -> {(r + 1) % ranks}[{(r + 1) % 2}] via P2P/IPC/read"
        ]
    if roll < 0.96:
        return [
            f"[rank0]: Saving checkpoint to {_HOME}/runs/llama-ft/checkpoint-{step}/"
            "model.safetensors",
            f"[rank0]: Saved optimizer state ({rng.uniform(20, 30):.1f} GiB) "
            f"in {rng.uniform(5, 20):.1f}s",
        ]
    if roll < 0.995:
        return [
            f"[rank{r}]:{_SITE}/torch/autograd/graph.py:744: UserWarning: grad and param do not "
            "obey the gradient layout contract. grad.sizes() = [4096, 11008], strides() = [1, 4096]"
        ]
    return [_planted(rng)]


def _failure(ranks: int) -> list[str]:
    bad = ranks - 1 if ranks > 1 else 0
    lines = [
        f"[rank{bad}]: Traceback (most recent call last):",
        f'[rank{bad}]:   File "{_HOME}/src/llama-ft/train.py", line 412, in <module>',
        f"[rank{bad}]:     main()",
        f'[rank{bad}]:   File "{_HOME}/src/llama-ft/train.py", line 388, in main',
        f"[rank{bad}]:     loss.backward()",
        f'[rank{bad}]:   File "{_SITE}/torch/_tensor.py", line 492, in backward',
        f"[rank{bad}]:     torch.autograd.backward(",
        f'[rank{bad}]:   File "{_SITE}/torch/autograd/__init__.py", line 251, in backward',
        f"[rank{bad}]:     Variable._execution_engine.run_backward(",
        f"[rank{bad}]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        f"1.96 GiB. GPU {bad % 2} has a total capacty of 79.15 GiB of which 1.02 GiB is free. "
        "Process 18805 has 78.12 GiB memory in use. Of the allocated memory 74.31 GiB is "
        "allocated by PyTorch, and "
        "2.87 GiB is reserved by PyTorch but unallocated.",
    ]
    for r in range(ranks):
        if r == bad:
            continue
        lines.append(
            f"[rank{r}]:[E1130 23:59:12.883{r}21 {18802 + r} ProcessGroupNCCL.cpp:1182] [Rank {r}] "
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600045 "
            "milliseconds before timing out."
        )
    lines += [
        f"E1130 23:59:30.102000 18801 torch/distributed/elastic/multiprocessing/api.py:826] "
        f"failed (exitcode: 1) local_rank: {bad} (pid: {18802 + bad}) of binary: "
        f"{_HOME}/miniconda3/envs/train/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        f"  host      : {_hosts(ranks)[bad]}.cluster.example.com",
        f"  rank      : {bad} (local_rank: {bad % 2})",
        f"  exitcode  : 1 (pid: {18802 + bad})",
    ]
    return lines


def generate_log(size_bytes: int, seed: int = 0, ranks: int = 4) -> Iterator[bytes]:
    """Yield about ``size_bytes`` of log in ~64 KiB blocks, never holding the whole log."""
    rng = random.Random(seed)
    tail = ("\n".join(_failure(ranks)) + "\n").encode()
    budget = max(0, size_bytes - len(tail))
    block: list[str] = [line + "\n" for line in _header(rng, ranks)]
    written = 0
    block_len = sum(len(s.encode()) for s in block)
    total = max(1000, budget // 120)
    step = 0
    while written + block_len < budget:
        step += 1
        for line in _body_lines(rng, ranks, step, total):
            s = line if line.endswith("\r") else line + "\n"
            block.append(s)
            block_len += len(s.encode())
        if block_len >= _BLOCK:
            yield "".join(block).encode()
            written += block_len
            block, block_len = [], 0
    if block:
        yield "".join(block).encode()
    yield tail


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)B?", text.strip().upper())
    if m is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=parse_size, default=parse_size("1MB"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args(argv)
    out = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")  # noqa: SIM115
    try:
        for block in generate_log(args.size, args.seed, args.ranks):
            out.write(block)
    finally:
        if out is not sys.stdout.buffer:
            out.close()


if __name__ == "__main__":
    main()
