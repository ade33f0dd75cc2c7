"""A small DDP job over gloo for the live tests (runs in .venv-realruns under torchrun).

LIVE_FAULT picks what happens at LIVE_FAIL_STEP on rank LIVE_FAIL_RANK:
  oom          the rank asks the CPU allocator for 64 TiB (a real allocator failure) and exits;
               over gloo the others often see its socket close at once and fail in their next
               all-reduce, or else wait there until the gloo timeout (LIVE_TIMEOUT seconds)
  oom-stays    as oom, but the failing rank prints its traceback and its process stays: over gloo
               the others would otherwise see its socket close at once, where NCCL ranks wait for
               the watchdog; here they wait in their all-reduce for the gloo timeout
  loader-hang  the rank's DataLoader blocks in its dataset's __getitem__ (a read that never returns)
  none         every rank trains LIVE_STEPS steps; rank 0 redraws a progress bar with `\\r`
Options come from the environment so the command line shows nothing of the fault.
"""

import datetime
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

FAULT = os.environ.get("LIVE_FAULT", "none")
FAIL_RANK = int(os.environ.get("LIVE_FAIL_RANK", "2"))
FAIL_STEP = int(os.environ.get("LIVE_FAIL_STEP", "3"))
STEPS = int(os.environ.get("LIVE_STEPS", "8"))
STEP_SECONDS = float(os.environ.get("LIVE_STEP_SECONDS", "0.2"))
TIMEOUT = float(os.environ.get("LIVE_TIMEOUT", "120"))


class Samples(Dataset):
    def __init__(self, rank: int) -> None:
        self.rank = rank

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> torch.Tensor:
        if FAULT == "loader-hang" and self.rank == FAIL_RANK and index >= FAIL_STEP * 8:
            read_shard_forever()
        return torch.randn(16)


def read_shard_forever() -> None:
    while True:  # a network file system read that never comes back
        time.sleep(1)


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    rank = dist.get_rank()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(rank), batch_size=8, num_workers=0)
    print(f"rank {rank}: training {STEPS} steps", flush=True)
    for step, batch in enumerate(loader):
        if step >= STEPS:
            break
        if FAULT == "oom" and rank == FAIL_RANK and step == FAIL_STEP:
            torch.empty(1 << 44, dtype=torch.float32)  # 64 TiB
        if FAULT == "oom-stays" and rank == FAIL_RANK and step == FAIL_STEP:
            try:
                torch.empty(1 << 44, dtype=torch.float32)  # 64 TiB
            except RuntimeError:
                lines = traceback.format_exc().splitlines()
                sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in lines))
                sys.stderr.flush()
                time.sleep(TIMEOUT + 60)
                raise
        loss = model(batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            done = step + 1
            bar = "#" * (20 * done // STEPS)
            sys.stdout.write(
                f"\r{done * 100 // STEPS:3d}%|{bar:<20}| {done}/{STEPS} [00:0{done % 10}<00:05, 4.{done}it/s]"
            )
            sys.stdout.flush()
        time.sleep(STEP_SECONDS)
    if rank == 0:
        sys.stdout.write("\n")
    print(f"rank {rank}: training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
