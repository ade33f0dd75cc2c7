"""The job's processes, read from /proc (psutil is not a client dependency), and their stacks.

torchrun starts every worker in a session of its own (`start_new_session`), so signalling the
job's process group does not reach them. A signal is first sent to the job's group only, as a
terminal would (torchrun forwards it to its workers and shuts down in order); what is still
alive after the grace period is killed, every process of the tree as it was before the first
signal (the workers of a dead torchrun are re-parented and no longer under it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
PYSPY_TIMEOUT = 30.0


def _parent_of(pid_dir: Path) -> int | None:
    try:
        stat = (pid_dir / "stat").read_bytes()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def parent_of(pid: int) -> int | None:
    return _parent_of(PROC / str(pid))


def descendants(root: int) -> list[int]:
    """Every process under `root` (not root itself), parents before children."""
    children: dict[int, list[int]] = {}
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if entry.name.isdigit():
            parent = _parent_of(entry)
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def rank_of(pid: int) -> int | None:
    """The RANK a launcher gave the process (torchrun, Slurm's srun, MPI), None without one."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    for name in (b"RANK", b"SLURM_PROCID", b"OMPI_COMM_WORLD_RANK", b"PMI_RANK"):
        value = env.get(name, b"")
        if value.isdigit():
            return int(value)
    return None


def is_python(pid: int) -> bool:
    """A Python interpreter: its executable or its argv[0] is named python*."""
    try:
        exe = os.readlink(PROC / str(pid) / "exe")
    except OSError:
        exe = ""
    args = cmdline(pid)
    names = [os.path.basename(exe)] + ([os.path.basename(args[0])] if args else [])
    return any(n.startswith("python") for n in names)


def signal_group(root: int, sig: int) -> None:
    """`sig` to the job's process group, as a terminal sends Ctrl-C to a foreground job."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, sig)


def signal_tree(root: int, sig: int) -> None:
    """`sig` to the job's process group and to every process under it (see the module's note)."""
    tree = descendants(root)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, sig)
    for pid in [root, *tree]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def alive(pids: list[int]) -> list[int]:
    """Those still running (a zombie no longer counts: it has stopped)."""
    out = []
    for pid in pids:
        try:
            state = (PROC / str(pid) / "stat").read_bytes()
        except OSError:
            continue
        if state[state.rfind(b")") + 2 : state.rfind(b")") + 3] != b"Z":
            out.append(pid)
    return out


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def pyspy() -> str | None:
    """py-spy on PATH, or beside this Python (a virtualenv's bin); an optional tool."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


@dataclass(frozen=True)
class Dump:
    pid: int
    text: str | None
    json: str | None
    error: str | None


def pyspy_dump(tool: str, pid: int) -> Dump:
    """`py-spy dump` of one process, as text and as JSON (the hang analyser reads either)."""
    outputs: list[str | None] = []
    error = None
    for extra in ([], ["--json"]):
        try:
            done = subprocess.run(  # noqa: S603  (our own tool, a pid: no shell)
                [tool, "dump", "--pid", str(pid), *extra],
                capture_output=True,
                text=True,
                timeout=PYSPY_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            outputs.append(None)
            error = f"py-spy dump --pid {pid}: {exc}"
            continue
        if done.returncode != 0:
            outputs.append(None)
            error = f"py-spy dump --pid {pid}: {(done.stderr or done.stdout).strip()[:300]}"
        else:
            outputs.append(done.stdout)
    return Dump(pid, outputs[0], outputs[1], error)
