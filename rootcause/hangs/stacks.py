"""A rank's stack read the way a person reads it: the frame that matters, and what it means.

For a rank inside a collective that frame is the collective and the user line that called it;
for a rank elsewhere it is the innermost frame of the program (not the standard library's, not
torch's), and its meaning comes from the frames around it: a DataLoader, a file read, a lock,
input(), a sleep, a host sync, rank-only work. The names are a heuristic, said as such in the
result ("looks like"), because a stack shows where a rank is, not why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rootcause.hangs.parsers import Frame, Thread

COLLECTIVES = {
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
    "broadcast", "barrier", "reduce", "gather", "scatter", "all_to_all", "all_to_all_single",
    "monitored_barrier", "all_gather_object", "broadcast_object_list", "send", "recv",
}  # fmt: skip

Meaning = Literal[
    "collective", "data", "io", "lock", "input", "sleep", "host-sync", "rank-only-work",
    "skipped-collective", "compute", "unknown",
]  # fmt: skip

MEANINGS: dict[Meaning, str] = {
    "collective": "waiting in a collective for the other ranks",
    "data": "data loading: a DataLoader or dataset fetch that does not return",
    "io": "file or network I/O that does not return",
    "lock": "waiting on a lock another thread holds",
    "input": "waiting for input() on a terminal nobody is at",
    "sleep": "sleeping (a retry, backoff or throttle)",
    "host-sync": "a host sync (.item(), .cpu(), synchronize) waiting on the device",
    "rank-only-work": "work only this rank does (evaluation, logging, checkpointing)",
    "skipped-collective": "a different collective call: a branch that skipped the others' call",
    "compute": "computing (forward, backward or the optimizer step)",
    "unknown": "elsewhere in the program",
}

_LIB = re.compile(
    r"(^|/)(threading|queue|selectors|socket|subprocess|multiprocessing/|concurrent/|asyncio/|"
    r"torch/|site-packages/|dist-packages/|lib/python3[.\d]*/)"
)
_PATTERNS: list[tuple[Meaning, re.Pattern[str]]] = [
    (
        "data",
        re.compile(
            r"(?i)dataloader|__getitem__|__next__|_next_data|fetch_batch|collate|"
            r"load_batch|get_batch|next_batch|sampler"
        ),
    ),
    ("lock", re.compile(r"(?i)\block\b|_lock|lock_|acquire|semaphore|mutex|Condition\.wait")),
    ("input", re.compile(r"(?i)\binput\b|prompt|ask_|confirm|getpass|readline")),
    ("host-sync", re.compile(r"(?i)\.item\b|^item$|synchronize|\bsync_to_host|\.cpu\b|tolist")),
    ("sleep", re.compile(r"(?i)sleep|backoff|throttle|retry|wait_until|poll")),
    (
        "io",
        re.compile(
            r"(?i)read|write|open|load|save|checkpoint|download|upload|fetch|shard|"
            r"file|fsync|flush|storage|s3|gcs|nfs"
        ),
    ),
    ("rank-only-work", re.compile(r"(?i)eval|validat|metric|test_|log_|report|wandb|tensorboard")),
    ("compute", re.compile(r"(?i)forward|backward|step|_call_impl|matmul|loss")),
]
_DATA_FILES = re.compile(r"torch/utils/data/")


@dataclass(frozen=True)
class Reading:
    """Where a rank's main thread is and what that means."""

    frame: str  # the function that matters: a collective's name, or the program's frame
    where: str  # file:line of the program's line (the caller of the collective)
    meaning: Meaning
    collective: str | None  # the collective it waits in, if any
    idle: bool | None


def main_thread(threads: list[Thread]) -> Thread | None:
    for t in threads:
        if t.main:
            return t
    with_module = [t for t in threads if t.frames and t.frames[-1].func == "<module>"]
    if with_module:
        return with_module[0]
    return threads[0] if threads else None


def _is_program(f: Frame) -> bool:
    return not _LIB.search(f.file) and not f.file.startswith("<")


def read_stack(threads: list[Thread]) -> Reading | None:
    thread = main_thread(threads)
    if thread is None or not thread.frames:
        return None
    frames = thread.frames  # innermost first
    program = [f for f in frames if _is_program(f)]
    user = program[0] if program else frames[0]
    for i, f in enumerate(frames):
        if f.func.rsplit(".", 1)[-1] in COLLECTIVES and "distributed" in f.file:
            caller = next((g for g in frames[i + 1 :] if _is_program(g)), user)
            return Reading(f.func, caller.where, "collective", f.func, thread.idle)
        if "DistributedDataParallel" in f.func or "reducer" in f.file.lower():
            caller = next((g for g in frames[i + 1 :] if _is_program(g)), user)
            return Reading(
                "backward (DDP all_reduce)", caller.where, "collective", "all_reduce", thread.idle
            )
    if thread.idle is not False and any(
        f.func.rsplit(".", 1)[-1] in ("backward", "run_backward") and "torch/" in f.file
        for f in frames[:4]
    ):
        # Idle in backward: DDP's reducer waits on the gradient all-reduce from C++, which no
        # Python stack shows; a rank computing its backward would be active.
        return Reading(
            "backward (DDP gradient all_reduce)",
            user.where,
            "collective",
            "all_reduce",
            thread.idle,
        )
    if any(_DATA_FILES.search(f.file) for f in frames):
        return Reading(user.func, user.where, "data", None, thread.idle)
    names = " ".join(f.func for f in program[:2]) or user.func
    innermost = frames[0]
    if innermost.file.endswith("threading.py") and innermost.func.endswith(("acquire", "wait")):
        return Reading(user.func, user.where, "lock", None, thread.idle)
    for meaning, pattern in _PATTERNS:
        if pattern.search(names):
            return Reading(user.func, user.where, meaning, None, thread.idle)
    return Reading(user.func, user.where, "unknown", None, thread.idle)


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 5, 7, 8, 9] -> "0-3, 5, 7-9"."""
    out: list[str] = []
    ranks = sorted(set(ranks))
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(out)
