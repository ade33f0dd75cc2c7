"""Launch train.py's ranks without torchrun: `--launcher spawn` (torch.multiprocessing.spawn) or
`--launcher mp` (plain multiprocessing.Process, joined and checked by hand, as many scripts do)."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train


def worker(rank: int, world: int) -> None:
    train.main([], rank=rank, world=world)


def free_port(preferred: int) -> int:
    """The launcher's own port choice: the preferred port, or the next free one."""
    for port in range(preferred, preferred + 20):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError as exc:
                print(f"master port {port} unavailable ({exc}), trying {port + 1}", flush=True)
                continue
            return port
    raise RuntimeError("no free port")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", choices=["spawn", "mp"], default="spawn")
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--master-port", type=int, default=29500)
    p.add_argument("--probe-port", action="store_true")
    args = p.parse_args()
    port = free_port(args.master_port) if args.probe_port else args.master_port
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if args.launcher == "spawn":
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs, join=True)
        return
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args.nprocs)) for r in range(args.nprocs)]
    for proc in procs:
        proc.start()
    failed = []
    for rank, proc in enumerate(procs):
        proc.join()
        if proc.exitcode != 0:
            failed.append((rank, proc.exitcode))
    if failed:
        print(f"worker processes failed: {failed}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
