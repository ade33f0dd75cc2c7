"""Recognise one file of a bundle by its content and parse it: a log, a flight-recorder dump
(JSON or pickle), a `py-spy dump` (text or --json), a faulthandler dump (alone or inside a log).

The rank of a file comes from its content where it says (a log's `[rank3]:` prefix or
`rank=3`), else from the number in its name (`rank3.log`, `nccl_trace_rank_3`, `pyspy-3.txt`),
as PyTorch's own fr_trace reads dump names; a py-spy dump names only a pid, which the logs or a
launcher's output may tie to a rank (`Analysis` does that).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rootcause.hangs import safepickle

Kind = Literal["log", "fr", "pyspy", "faulthandler"]


class Masking(Protocol):
    def text(self, text: str) -> str: ...
    def string(self, value: str) -> str: ...


@dataclass(frozen=True)
class Frame:
    func: str
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


@dataclass
class Thread:
    name: str
    frames: list[Frame]  # innermost first
    idle: bool | None = None
    main: bool = False


@dataclass
class Collective:
    """One flight-recorder entry."""

    pg: str
    seq: int
    op: str
    sizes: list[object]  # as the dump gives them (lists of ints, often), shown as JSON
    dtypes: list[str]
    completed: bool
    created_ns: int
    timeout_ms: int | None
    frames: list[Frame] = field(default_factory=list)

    def signature(self) -> tuple[str, str, str]:
        return (self.op, json.dumps(self.sizes), ",".join(self.dtypes))


@dataclass
class FlightRecord:
    entries: list[Collective]
    pg_ranks: dict[str, list[int]]
    last_completed: dict[str, int]
    last_enqueued: dict[str, int]


@dataclass
class LogInfo:
    lines: list[str]
    pids: dict[int, int]  # pid -> rank, from launcher lines or a rank's own start line
    exit_codes: dict[int, int]  # rank -> exit code, from a launcher's output
    collected_ns: int | None = None


@dataclass
class Parsed:
    name: str
    kind: Kind
    rank: int | None
    fr: FlightRecord | None = None
    threads: list[Thread] = field(default_factory=list)
    pid: int | None = None
    log: LogInfo | None = None


_NAME_RANK = re.compile(r"(?i)(?:rank|worker|proc|process|node|gpu)[_.-]?(\d{1,6})")
_LAST_NUMBER = re.compile(r"(\d{1,6})(?!.*\d)")
_LOG_RANK = re.compile(
    r"^\[rank(\d{1,6})\]:|\brank[= ](\d{1,6})\b|\[(?:default|trainer)(\d{1,6})\]:"
)
_PYSPY_HEAD = re.compile(r"^Process (\d+): ", re.M)
_PYSPY_THREAD = re.compile(r"^Thread (0x[0-9A-Fa-f]+|\d+) \((idle|active|[^)]*)\)(?:: \"(.*)\")?")
_PYSPY_FRAME = re.compile(r"^\s+(.+?) \(([^()]*?):(\d+)\)\s*$")
_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+) \(most recent call first\):")
_FH_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.+)$')
_LAUNCH_PID = re.compile(r"\brank (\d+)(?: \(pid (\d+)\))?[:,]? (?:pid (\d+)|exit code (-?\d+))")
_OWN_PID = re.compile(r"starting rank (\d+) of \d+, pid (\d+)")
_COLLECTED = re.compile(r"bundle collected at \S+ \(epoch_ns (\d+)\)")


def rank_from_name(name: str) -> int | None:
    base = name.rsplit("/", 1)[-1]
    m = _NAME_RANK.search(base) or _LAST_NUMBER.search(base)
    return int(m.group(1)) if m else None


def parse_file(name: str, data: bytes, masking: Masking) -> Parsed | None:
    """The file parsed as what its content is, or None when it is none of them."""
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        try:
            value = safepickle.loads(data)
        except safepickle.PickleRefused as exc:
            raise safepickle.PickleRefused(f"{name}: {exc}") from None
        return _flight_record(name, value, masking)
    if b"\x00" in data[:4096]:
        return None  # binary we do not read
    text = data.decode("utf-8", errors="replace")
    head = text.lstrip()[:1]
    if head in "{[" and head:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if (
            isinstance(value, dict)
            and "entries" in value
            and ("pg_status" in value or "version" in value)
        ):
            return _flight_record(name, value, masking)
        if (
            isinstance(value, list)
            and value
            and all(isinstance(t, dict) and "frames" in t for t in value)
        ):
            return _pyspy_json(name, value, masking)
    text = masking.text(text)
    if _PYSPY_HEAD.match(text) and "\nThread " in text:
        return _pyspy_text(name, text)
    threads = faulthandler_threads(text)
    lines = text.splitlines()
    if threads and len(lines) <= sum(len(t.frames) + 2 for t in threads) + 2:
        return Parsed(name, "faulthandler", rank_from_name(name), threads=threads)
    return Parsed(name, "log", _log_rank(name, lines), threads=threads, log=_log_info(lines))


# A dump's JSON or pickle tree (any node), walked and read by .get(): every value is checked where
# it is used (isinstance, _int, str()), so a JSON union would add only casts.
def _mask_tree(value: Any, masking: Masking) -> Any:
    if isinstance(value, str):
        return masking.string(value)
    if isinstance(value, dict):
        return {k: _mask_tree(v, masking) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask_tree(v, masking) for v in value]
    return value


def _int(value: object, default: int = -1) -> int:  # any node of such a tree
    if not isinstance(value, (int, float, str, bytes)):
        return default
    try:
        return int(value)
    except ValueError:
        return default


@functools.lru_cache(maxsize=256)
def _rank_list(text: str) -> list[int]:
    # Every rank's dump lists every rank of the group: parsed once per bundle, not per file
    # (2,048 dumps of 2,048 ranks each were most of the time). Callers do not mutate it.
    return [int(r) for r in re.findall(r"\d+", text)]


# `raw`: the flight recorder's unpickled or parsed tree, read as _mask_tree reads it
def _flight_record(name: str, raw: Any, masking: Masking) -> Parsed | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        return None
    value = _mask_tree(raw, masking)
    pg_ranks: dict[str, list[int]] = {}
    for key, cfg in (value.get("pg_config") or {}).items():
        ranks = cfg.get("ranks") if isinstance(cfg, dict) else None
        if isinstance(ranks, str):
            pg_ranks[str(key)] = _rank_list(ranks)
        elif isinstance(ranks, list):
            pg_ranks[str(key)] = [_int(r) for r in ranks]
    completed: dict[str, int] = {}
    enqueued: dict[str, int] = {}
    for pg, status in (value.get("pg_status") or {}).items():
        if isinstance(status, dict):
            completed[str(pg)] = _int(status.get("last_completed_collective"))
            enqueued[str(pg)] = _int(status.get("last_enqueued_collective"))
    entries = []
    for e in value["entries"]:
        if not isinstance(e, dict) or e.get("is_p2p"):
            continue
        pg = str(e.get("pg_id", "0"))
        seq = _int(e.get("collective_seq_id"))
        done = seq <= completed[pg] if pg in completed else e.get("state") == "completed"
        frames = [
            Frame(str(f.get("name", "?")), str(f.get("filename", "?")), _int(f.get("line"), 0))
            for f in e.get("frames") or []
            if isinstance(f, dict)
        ]
        entries.append(
            Collective(
                pg=pg,
                seq=seq,
                op=str(e.get("profiling_name", "?")).split(":")[-1],
                sizes=e.get("input_sizes") or [],
                dtypes=[str(d) for d in e.get("input_dtypes") or []],
                completed=bool(done),
                created_ns=_int(e.get("time_created_ns"), 0),
                timeout_ms=_int(e.get("timeout_ms"), 0) or None,
                frames=frames,
            )
        )
    fr = FlightRecord(entries, pg_ranks, completed, enqueued)
    return Parsed(name, "fr", rank_from_name(name), fr=fr)


def _pyspy_json(name: str, raw: list[object], masking: Masking) -> Parsed:
    value = _mask_tree(raw, masking)
    threads = []
    pid = None
    for t in value:
        pid = _int(t.get("pid"), 0) or pid
        frames = [
            Frame(str(f.get("name", "?")), str(f.get("filename", "?")), _int(f.get("line"), 0))
            for f in t.get("frames") or []
            if isinstance(f, dict)
        ]
        tname = str(t.get("thread_name") or "")
        threads.append(
            Thread(tname, frames, idle=not t.get("active", True), main=tname == "MainThread")
        )
    return Parsed(name, "pyspy", rank_from_name(name), threads=threads, pid=pid)


def _pyspy_text(name: str, text: str) -> Parsed:
    m = _PYSPY_HEAD.match(text)
    pid = int(m.group(1)) if m else None
    threads: list[Thread] = []
    for line in text.splitlines():
        tm = _PYSPY_THREAD.match(line)
        if tm:
            tname = tm.group(3) or ""
            threads.append(
                Thread(tname, [], idle=tm.group(2) == "idle", main=tname == "MainThread")
            )
            continue
        fm = _PYSPY_FRAME.match(line)
        if fm and threads:
            threads[-1].frames.append(Frame(fm.group(1), fm.group(2), int(fm.group(3))))
    return Parsed(name, "pyspy", rank_from_name(name), threads=threads, pid=pid)


def faulthandler_threads(text: str) -> list[Thread]:
    """The last faulthandler dump in the text (a log may hold several; the last is the latest)."""
    blocks: list[list[Thread]] = []
    current: Thread | None = None
    for line in text.splitlines():
        tm = _FH_THREAD.match(line)
        if tm:
            if current is None or not blocks or (blocks[-1] and _block_ended(blocks[-1], tm)):
                blocks.append([])
            current = Thread(tm.group(2), [], main=tm.group(1) == "Current thread")
            blocks[-1].append(current)
            continue
        fm = _FH_FRAME.match(line)
        if fm and current is not None:
            current.frames.append(Frame(fm.group(3).strip(), fm.group(1), int(fm.group(2))))
        elif current is not None and line.strip():
            current = None
    if not blocks:
        return []
    threads = blocks[-1]
    # faulthandler names no thread; the main one runs the module (its outermost frame).
    for t in threads:
        t.main = bool(t.frames) and t.frames[-1].func == "<module>"
    return threads


def _block_ended(block: list[Thread], tm: re.Match[str]) -> bool:
    return any(t.name == tm.group(2) for t in block)


def _log_rank(name: str, lines: list[str]) -> int | None:
    votes: Counter[int] = Counter()
    for line in lines[:2000]:
        m = _LOG_RANK.search(line)
        if m:
            votes[int(next(g for g in m.groups() if g is not None))] += 1
    if votes:
        rank, n = votes.most_common(1)[0]
        if n >= 0.6 * sum(votes.values()):
            return rank
        return None  # an interleaved log of several ranks
    return rank_from_name(name)


def _log_info(lines: list[str]) -> LogInfo:
    pids: dict[int, int] = {}
    codes: dict[int, int] = {}
    collected = None
    for line in lines:
        m = _OWN_PID.search(line)
        if m:
            pids[int(m.group(2))] = int(m.group(1))
        m = _LAUNCH_PID.search(line)
        if m:
            rank = int(m.group(1))
            pid = m.group(2) or m.group(3)
            if pid:
                pids[int(pid)] = rank
            if m.group(4) is not None:
                codes[rank] = int(m.group(4))
        m = _COLLECTED.search(line)
        if m:
            collected = int(m.group(1))
    return LogInfo(lines, pids, codes, collected)
