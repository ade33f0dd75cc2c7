"""The hang bundle of a stalled job, and the one call into the hang analyser.

A bundle is a directory of the job's raw artefacts, as `rootcause diagnose --offline DIR` takes
them (issue 30: recognised by content, masked when read): `py-spy dump` text and JSON of every
Python process of the job (`pyspy-rank<N>-pid<P>.txt`/`.json` for each rank's main process, the
rank read from its environment; `pyspy-others.txt`/`.json` for the launcher and the ranks'
children such as DataLoader workers), `processes.json` (pid, rank, command line of
each process), the flight recorder's dumps under `flight-recorder/`, each rank's last lines as
`rank<N>.log` (`unranked.log` for lines that name none), and `README.txt` saying what is there
and what is missing. It stays on this machine."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rootcause.cli.results import FileResult
from rootcause.engine import get_engine
from rootcause.live import procs
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult

# torch 2.13 reads TORCH_FR_BUFFER_SIZE for the size of each process group's ring of collectives,
# and writes a rank's dump to TORCH_FR_DUMP_TEMP_FILE followed by the rank when a watchdog fires
# (checked in the installed 2.13.0: distributed_c10d.py and libtorch_cpu's strings). The older
# TORCH_NCCL_TRACE_BUFFER_SIZE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE are not set: 2.13 prints a
# deprecation warning per rank for them, and a user who set them keeps them.
FR_BUFFER_ENTRIES = "2000"
FR_FILE_PREFIX = "fr_trace_rank_"


def arm_flight_recorder(env: dict[str, str], directory: Path) -> dict[str, str]:
    """The job's environment with the recorder armed, unless the user set it already."""
    prefix = str(directory / FR_FILE_PREFIX)
    armed = dict(env)
    for name, value in (
        ("TORCH_FR_BUFFER_SIZE", FR_BUFFER_ENTRIES),
        ("TORCH_FR_DUMP_TEMP_FILE", prefix),
    ):
        armed.setdefault(name, value)
    return armed


def flight_recorder_files(env: dict[str, str]) -> list[Path]:
    """The dumps the recorder has written so far, under the prefix the job was given."""
    prefix = env.get("TORCH_FR_DUMP_TEMP_FILE") or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if not prefix:
        return []
    where = Path(prefix)
    try:
        return sorted(p for p in where.parent.glob(where.name + "*") if p.is_file())
    except OSError:
        return []


@dataclass
class Bundle:
    directory: Path
    dumps: list[int] = field(default_factory=list)  # pids dumped by py-spy
    pyspy_missing: bool = False
    pyspy_errors: list[str] = field(default_factory=list)
    python_pids: list[int] = field(default_factory=list)
    flight_recorder: list[str] = field(default_factory=list)
    ranks: list[int | None] = field(default_factory=list)
    # ranks whose main process was found but whose output showed no line naming them
    silent: list[int] = field(default_factory=list)

    def notes(self) -> list[str]:
        """What the bundle holds and what it lacks, for the user and README.txt."""
        out = []
        if self.pyspy_missing:
            out.append(
                "py-spy not found: no stacks of the job's processes (pip install py-spy, then "
                "the next stall's bundle has each rank's stack)"
            )
        elif self.python_pids:
            out.append(
                f"py-spy: {len(self.dumps)} of {len(self.python_pids)} Python processes dumped"
            )
        out.extend(self.pyspy_errors[:5])
        if self.flight_recorder:
            out.append(f"flight recorder: {len(self.flight_recorder)} dumps")
        else:
            out.append(
                "flight recorder: no dump yet (torch writes one per rank when a collective's "
                "watchdog fires; rerun the bundle after the timeout, or arm it with "
                "TORCH_FR_BUFFER_SIZE and TORCH_FR_DUMP_TEMP_FILE)"
            )
        out.append(f"last lines of {len(self.ranks)} ranks")
        if self.silent:
            out.append(
                "no line of output named rank(s) "
                + ", ".join(map(str, self.silent))
                + " before the stall: their rank<N>.log is empty"
            )
        return out


def _rank_file(rank: int | None) -> str:
    return "unranked.log" if rank is None else f"rank{rank}.log"


def write_last_lines(directory: Path, last: dict[int | None, list[str]]) -> list[int | None]:
    for rank, lines in last.items():
        (directory / _rank_file(rank)).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sorted(last, key=lambda r: -1 if r is None else r)


def write_silent_ranks(
    directory: Path, ranks: set[int], last: dict[int | None, list[str]]
) -> list[int]:
    """An empty `rank<N>.log` for each rank whose process runs but whose output named it in no
    line (a rank that had printed nothing yet, or whose lines carry no rank): one file per rank
    whatever each said, and the README says which said nothing."""
    silent = sorted(ranks - set(last))
    for rank in silent:
        (directory / _rank_file(rank)).write_text("", encoding="utf-8")
    return silent


def collect_bundle(
    *,
    directory: Path,
    root_pid: int | None,
    env: dict[str, str],
    last_lines: dict[int | None, list[str]],
    on_note: Callable[[str], None] = lambda _: None,
) -> Bundle:
    """Stacks of every Python process under `root_pid`, the recorder's dumps, each rank's last
    lines, into `directory` (created)."""
    directory.mkdir(parents=True, exist_ok=True)
    bundle = Bundle(directory)
    ranks: set[int] = set()
    if root_pid is not None:
        tree = [root_pid, *procs.descendants(root_pid)]
        bundle.python_pids = [p for p in tree if procs.is_python(p)]
        _write_processes(directory, tree)
        rank_of_main = {pid: _rank_process(pid) for pid in bundle.python_pids}
        ranks = {r for r in rank_of_main.values() if r is not None}
        tool = procs.pyspy()
        if tool is None:
            bundle.pyspy_missing = True
        else:
            on_note(f"py-spy dump of {len(bundle.python_pids)} Python processes")
            others: list[procs.Dump] = []
            for pid in bundle.python_pids:
                dump = procs.pyspy_dump(tool, pid)
                rank = rank_of_main[pid]
                if rank is None:
                    others.append(dump)
                else:
                    _write_dump(directory, f"pyspy-rank{rank}-pid{pid}", dump)
                if dump.text is not None or dump.json is not None:
                    bundle.dumps.append(pid)
                if dump.error:
                    bundle.pyspy_errors.append(dump.error)
            _write_others(directory, others)
    add_flight_recorder(bundle, env)
    bundle.ranks = write_last_lines(directory, last_lines)
    bundle.silent = write_silent_ranks(directory, ranks, last_lines)
    write_readme(bundle)
    return bundle


def _rank_process(pid: int) -> int | None:
    """The rank whose main process `pid` is; None for the launcher and for a rank's children
    (DataLoader workers inherit RANK: two dumps for one rank would hide which one waits)."""
    rank = procs.rank_of(pid)
    if rank is None:
        return None
    parent = procs.parent_of(pid)
    return None if parent is not None and procs.rank_of(parent) == rank else rank


def _write_dump(directory: Path, stem: str, dump: procs.Dump) -> None:
    if dump.text is not None:
        (directory / f"{stem}.txt").write_text(dump.text, encoding="utf-8")
    if dump.json is not None:
        (directory / f"{stem}.json").write_text(dump.json, encoding="utf-8")


def _write_others(directory: Path, dumps: list[procs.Dump]) -> None:
    """The launcher's and the ranks' children's stacks in one file each (text, JSON), named
    without a number: the analyser takes a rank from the last number of a name (issue 30)."""
    texts = [d.text for d in dumps if d.text]
    if texts:
        (directory / "pyspy-others.txt").write_text("\n".join(texts), encoding="utf-8")
    threads: list[object] = []
    for dump in dumps:
        try:
            threads.extend(json.loads(dump.json) if dump.json else [])
        except (ValueError, TypeError):
            continue
    if threads:
        (directory / "pyspy-others.json").write_text(json.dumps(threads), encoding="utf-8")


def _write_processes(directory: Path, tree: list[int]) -> None:
    """processes.json: each process of the job, its rank (from its environment) and command."""
    rows = [
        {
            "pid": pid,
            "rank": procs.rank_of(pid),
            "python": procs.is_python(pid),
            "cmdline": procs.cmdline(pid),
        }
        for pid in tree
    ]
    (directory / "processes.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def add_flight_recorder(bundle: Bundle, env: dict[str, str]) -> None:
    """Copies the dumps written so far (again after the job ended: a watchdog may fire late)."""
    found = flight_recorder_files(env)
    if not found:
        return
    target = bundle.directory / "flight-recorder"
    target.mkdir(exist_ok=True)
    for path in found:
        shutil.copy2(path, target / path.name)
        if path.name not in bundle.flight_recorder:
            bundle.flight_recorder.append(path.name)


def write_readme(bundle: Bundle) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    lines = [f"rootcause hang bundle, collected {stamp}", "", *bundle.notes(), ""]
    lines.append(f"diagnose it: rootcause diagnose --offline {bundle.directory}")
    (bundle.directory / "README.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def bundle_directory(base: str) -> Path:
    """A new directory for this stall: `base` if given, else ./rootcause-hang-<time>-<pid>."""
    if base:
        path = Path(base)
        if path.exists() and any(path.iterdir()):
            path = path / time.strftime("%Y%m%d-%H%M%S")
        return path
    return Path.cwd() / f"rootcause-hang-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


# The hang analyser of issue 30 (`rootcause.hangs`), looked up at run time so that this package
# works, collecting bundles, in an install without it. The one place the two meet.
ANALYSER_MODULE = "rootcause.hangs"
ANALYSER_FUNCTION = "diagnose_bundle"


def analyser() -> Callable[[str], DiagnosisResult] | None:
    try:
        module = importlib.import_module(ANALYSER_MODULE)
    except ImportError:
        return None
    function = getattr(module, ANALYSER_FUNCTION, None)
    return function if callable(function) else None


def diagnose_bundle(directory: Path) -> FileResult | None:
    """The hang verdict of a bundle directory, or None when the analyser is not installed.

    Calls `rootcause.hangs.diagnose_bundle(path: str) -> DiagnosisResult` (reads the files by
    content, masks them, returns the verdict as `failure.slug`, a single culprit as
    `initiating_rank`, the `hang` section), then completes it with the class's fix as
    `diagnose --offline` does. Raises what the analyser raises (BundleError).
    """
    function = analyser()
    if function is None:
        return None
    result = function(str(directory))
    engine = get_engine()
    entry = engine.by_slug.get(result.failure.slug) if result.failure else None
    completed = complete_result(result, entry=entry, include_fix=True, masking=dict(result.masking))
    return FileResult(**vars(completed), file=str(directory))
