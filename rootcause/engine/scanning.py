"""Reading a log: one pass over line-aligned chunks that remembers a bounded state (Scan).

Hyperscan flags the lines that match a fingerprint or one of the engine's own markers, and only
those lines get Python work (prefix, rank, time, traceback look-back, confirmation). State is
bounded whatever the log size: first hits per signal and rank, a capped list of anchor lines, the
last lines of the log, and the look-back window.
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from rootcause.engine.metrics import Metrics
from rootcause.evidence import (
    FRAME_LINE_RE,
    LAUNCHER_FAILED_RE,
    LOOKBACK_LINES,
    ChunkLines,
    LineContext,
    LineInfo,
    parse_line,
)
from rootcause.matching import CONFIRM_WINDOW, Matcher, Signal
from rootcause.ranks import (
    CRASH_EXIT_RE,
    DS_CAVEAT,
    LAUNCHER_RANK_RE,
    MAX_NCCL_PIDS,
    ROOT_CAUSE_HEAD,
    CrossRankEvidence,
    crash_code,
    deepspeed_exit,
    mpi_exit,
    nccl_process,
    nccl_rank,
    spawn_exit,
)
from rootcause.runfacts import MARKER as RUNFACTS_MARKER
from rootcause.runfacts import RunFacts

EVIDENCE_CHARS = 300  # what an evidence line shows of its line
HIT_CHARS = 2 * EVIDENCE_CHARS  # what a remembered hit keeps of its line
MAX_ANCHORS = 2000
MAX_PENDING = 2000
# An exception line ("RuntimeError: ...") as Python prints the last line of a traceback.
_RAISED_RE = re.compile(r"^[A-Za-z_][\w.]{0,120}(?:Error|Exception)\b: ")
MAX_UNRANKED_RAISES = 50
MAX_ERROR_LINES = 20
TAIL_LINES = 6  # the last lines of a log kept for the missing-facts and recovery checks

# The engine's own markers, scanned in the same database after the catalogue's signals.
INTERNAL = {
    "traceback": r"Traceback \(most recent call last\)",
    "exception": (
        r"\b[A-Z][A-Za-z0-9_]{0,60}(Error|Exception)\b: |terminate called after throwing|"
        r"\bwhat\(\): |\bNCCL WARN\b|Segmentation fault|Fatal Python error|core dumped|"
        r"\bKilled\s*$|\bexitcode\s*: -?[1-9]"
    ),
    "seqnum": r"WorkNCCL\(SeqNum=\d+, OpType=",
    "enqueued": r"last enqueued NCCL work: -?\d+, last completed NCCL work",
    "mismatch": r"is running collective: CollectiveFingerPrint\(",
    "first_pg": r"First PG on this rank to signal dumping",
    "watchdog": (
        r"detected by watchdog at work\b|Watchdog caught collective operation timeout|"
        r"\] Timeout at NCCL work: \d"
    ),
    "named_rank": (
        r"did not receive grad for rank \d|failed to pass monitoredBarrier|"
        r"waiting for send/recv from rank \d"
    ),
    "launcher_rank": r"rank\s*:?\s*\d+\s*\(local[_ ]rank",
    "launcher_failed": r"\bfailed \(exitcode: -?\d+\) (?:local_rank|for binary)",
    # how the run was launched (rootcause/runfacts.py)
    "launch": RUNFACTS_MARKER,
    # mpirun's report of the first process it saw exit (Open MPI / Horovod jobs)
    "mpi_exit": r"\bnoticed that process rank \d+ with PID|^\s*Process name: \[\[\d+,\d+\],\d+\]",
    # DeepSpeed's launcher reporting the worker that exited non-zero (rootcause/ranks.py)
    "ds_exit": r"sigkill_handler\] \[",
    # an NCCL INFO line stating its process's rank: that pid's later lines are that rank's
    "nccl_rank": r"NCCL INFO (?:Trees \[0\] -?\d|[^\n]{0,80}\brank \d+ n[Rr]anks \d)",
    # torchrun's `--tee` prefix (a local rank) behind a host prefix: how many nodes the log shows
    "tee_host": r"^[A-Za-z0-9_.<>-]{1,64}: \[default\d",
    # what the launcher says of the node it runs on (group_rank=1, --nproc_per_node=4, ...)
    "layout": (
        r"\b(?:group_rank|node_rank)[=:]\s?\d|--node[_-]rank[= ]\d|\bglobal_ranks'?(?:=|: )\[|"
        r"\b(?:local_world_size|num_local_procs|group_world_size|nnodes)[=:]\s?\d|"
        r"--nproc[_-]per[_-]node[= ]\d|--nnodes[= ]\d"
    ),
    # a failure the run says it handled: the batch skipped, the read retried until it worked
    "recovery": (
        r"(?i)\bskipping (?:this |the )?batch\b|\bskipped (?:this |the )?batch\b|"
        r"\bresumed from [^\n]{1,300} after \d+ attempts|\bsucceeded (?:after|on) (?:retry|attempt)"
    ),
}
# Rank markers, one pattern per rank number, reported once per chunk (Hyperscan SINGLEMATCH):
# the set of ranks a log shows costs no per-line work.
MAX_MARKED_RANK = 256
RANK_MARKERS = [
    rf"\[(?:rank|default|Rank|RANK)(?: |: )?{r}\]|\brank={r}\b|^{r}: "
    for r in range(MAX_MARKED_RANK)
]
# Hits of one signal in one chunk that get Python work: the first ones and the last ones (the
# end of a log is where the error and its context usually are). A signal firing on every line
# of a healthy log then costs a bounded amount per chunk.
HEAD_HITS, TAIL_HITS = 3, 20
# A caught error after which the run went on training (this many of the log's last lines are
# training progress, and no error or traceback came after it) was recovered from: a retried OOM
# that halved the batch. Bare tqdm bars do not count: a dying process still flushes its bars.
RECOVERY_PROGRESS_LINES = 3
TRAINING_LINE_RE = re.compile(
    r"(?i)\b(?:step|epoch|iter|iteration)\b[ =:\[]{0,3}\d|"
    r"\b(?:train_|val_|eval_)?loss['\"]?\s{0,3}[:=]\s{0,3}[0-9]"
)


def is_training_line(line: str) -> bool:
    """Whether the first 400 characters of ``line`` read as training progress (TRAINING_LINE_RE).

    Called on every line of the look-back windows and the tail, so the regex (its caseless
    alternation costs microseconds a line) runs only on a line holding one of its words,
    caseless: "step", "epoch", "iter" or "loss". Told by lower() in an ASCII line (most of
    them: there only ASCII letters match the pattern's); any other line goes to the pattern,
    whose caseless 's' is also U+017F and 'i' U+0130 and U+0131."""
    head = line[:400]
    if head.isascii():
        lower = head.lower()
        if not ("step" in lower or "epoch" in lower or "iter" in lower or "loss" in lower):
            return False
    return TRAINING_LINE_RE.search(head) is not None


Stream = tuple[int, str | None, int | None]  # (source index, host, rank)


@dataclass
class Hit:
    """A line that matched a signal or a marker, as the rules need it later."""

    source: int
    line: int
    rank: int | None
    host: str | None
    ts: float | None
    text: str
    # for an exception raised while handling an earlier one: the line span (first line of the
    # chain, marker line) where the earlier exceptions sit
    chained: tuple[int, int] | None = None


@dataclass
class Scan:
    """Everything one diagnosis remembers while it reads; every container is bounded."""

    sources: list[str] = field(default_factory=list)
    source_ranks: list[int | None] = field(default_factory=list)
    lines: int = 0
    chars: int = 0
    # signal index -> first confirmed hit per rank (None for unranked), for held signals
    first_hits: dict[int, dict[int | None, Hit]] = field(default_factory=dict)
    # signal index -> first hits whatever in_frame/numeric said (for search)
    loose_hits: dict[int, list[Hit]] = field(default_factory=dict)
    # (entry, stream) -> lines of its unconditional error hits, for within_lines
    anchors: dict[tuple[int, Stream], list[int]] = field(default_factory=dict)
    pending: list[tuple[int, Stream, Hit]] = field(default_factory=list)
    tracebacks: int = 0
    exceptions: dict[int | None, Hit] = field(default_factory=dict)
    ranks_seen: set[int] = field(default_factory=set)
    evidence: CrossRankEvidence = field(default_factory=CrossRankEvidence)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    tail_at: deque[tuple[int, int]] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    # positions (source, line) for the recovery rule: the last error hit of each entry, and
    # the last error hit / exception / traceback line of any kind
    last_error: dict[int, tuple[int, int]] = field(default_factory=dict)
    last_trouble: tuple[int, int] = (-1, -1)
    # entry -> positions of its error lines that are a raised exception on an unranked line (not
    # the later link of a chain): several of them are several processes
    # (the same message raised again is another process; another message of the same entry,
    # e.g. a destructor's error after the build error, may be the same process: kept by signal)
    unranked_raises: dict[int, set[tuple[int, int, int]]] = field(default_factory=dict)
    # positions of trouble lines (traceback / exception) after which training went on for at
    # least RECOVERY_PROGRESS_LINES progress lines before the next trouble line
    resumed_after: list[tuple[int, int]] = field(default_factory=list)
    # positions of lines that say a failure was handled (a batch skipped, a read that succeeded
    # after retries)
    recoveries: list[tuple[int, int]] = field(default_factory=list)
    # the first and the last error-looking lines of any stream (exception lines, NCCL WARN,
    # crash banners), for the similarity fallback when no fingerprint holds
    error_lines: list[Hit] = field(default_factory=list)
    error_tail: deque[Hit] = field(default_factory=lambda: deque(maxlen=MAX_ERROR_LINES))
    run: RunFacts = field(default_factory=RunFacts)
    # hits of cut_traceback signals, kept only if the log ends inside their traceback; and the
    # last exception line of any kind (after it, a traceback was not cut)
    cut_hits: list[tuple[int, Hit]] = field(default_factory=list)
    last_raise: tuple[int, int] = (-1, -1)
    metrics: Metrics = field(default_factory=Metrics)


_NAME_RANK_RE = re.compile(r"(?i)(?:rank|worker|proc|process|node|gpu)[_.-]?(\d{1,5})(?!.*\d)")


def rank_from_name(name: str, index: int) -> int:
    m = _NAME_RANK_RE.search(name.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else index


def ends_in_traceback(scan: Scan) -> bool:
    """The log's last line is a frame or the code under one (indented, not an exception line):
    the paste stops inside a traceback, before the exception line that would end it."""
    if not scan.tail:
        return False
    last = parse_line(scan.tail[-1]).text
    return bool(FRAME_LINE_RE.match(last)) or (last[:1].isspace() and bool(last.strip()))


def _note_crash(scan: Scan, rank: int | None, code: int) -> None:
    """A launcher's line reports a worker dead of a crash signal of its own (rootcause/ranks.py)."""
    if rank is not None and crash_code(code) and len(scan.evidence.crashed) < MAX_MARKED_RANK:
        scan.evidence.crashed.add(rank)


def _mark_chain(ctx: LineContext, i: int, lineno: int, hit: Hit) -> None:
    chain = ctx.chained_after(i)
    if chain is not None:
        hit.chained = (lineno + chain[0], lineno + chain[1])


class Scanner:
    """The catalogue's signals and the engine's markers in one Hyperscan database, and the work
    on the lines they flag. Built once per engine; a Scan holds what one log leaves behind."""

    def __init__(self, signals: list[Signal]) -> None:
        self.signals = signals
        self.internal_base = len(signals)
        self.internal_names = list(INTERNAL)
        self.marker_base = self.internal_base + len(INTERNAL)
        self.tee_host_pid = self.internal_base + self.internal_names.index("tee_host")
        self.matcher = Matcher(
            [s.regex.pattern for s in signals] + list(INTERNAL.values()) + RANK_MARKERS,
            single=set(range(self.marker_base, self.marker_base + len(RANK_MARKERS))),
        )

    def scan_source(self, scan: Scan, source: int, chunks: Iterable[str]) -> None:
        tail: Sequence[str] = []
        # the previous chunk's lines: its look-back tail is read only when another chunk comes
        # (for the last chunk of a log, most often the only one, it would be read for nothing)
        previous: ChunkLines | None = None
        base = 0  # lines before the current chunk
        for chunk in chunks:
            if not chunk:
                continue
            if previous is not None:
                tail, previous = previous.last(LOOKBACK_LINES), None
            scan.chars += len(chunk)
            body = chunk[:-1] if chunk.endswith("\n") else chunk
            data = body.encode("utf-8", "surrogatepass")
            hits, starts = self.matcher.scan(data)
            window = ChunkLines(tail, data, starts)
            # the chunk's own last lines (the look-back tail before them was kept already)
            last_lines = window[-min(TAIL_LINES, window.n_lines) :]
            first_no = base + window.n_lines - len(last_lines) + 1
            for k, line in enumerate(last_lines):
                if line.strip():
                    scan.tail.append(line)
                    scan.tail_at.append((source, first_no + k))
            ctx = LineContext(window)
            offset = len(tail)
            anchored: set[int] = set()
            by_signal: dict[int, list[int]] = {}
            for line_index, pid in hits:
                if pid >= self.marker_base:
                    scan.ranks_seen.add(pid - self.marker_base)
                elif pid == self.tee_host_pid:
                    # on every such line, so only a slice until a second host is seen
                    if scan.evidence.layout.hosts < 2:
                        raw = window[offset + line_index]
                        scan.evidence.layout.note_host(raw[: raw.find(": [default")])
                elif pid >= self.internal_base:
                    self._on_hit(scan, ctx, source, offset + line_index, base + line_index + 1, pid)
                else:
                    by_signal.setdefault(pid, []).append(line_index)
                    if self.signals[pid].kind == "error":
                        anchored.add(self.signals[pid].entry)
            # errors first, so that support hits of an entry see its anchors of this chunk
            for pid in sorted(by_signal, key=lambda p: self.signals[p].kind != "error"):
                indexes = by_signal[pid]
                sig = self.signals[pid]
                keep_all = sig.kind == "support" and sig.entry in anchored and sig.within_lines
                if not keep_all and len(indexes) > HEAD_HITS + TAIL_HITS:
                    indexes = indexes[:HEAD_HITS] + indexes[-TAIL_HITS:]
                for line_index in indexes:
                    self._on_hit(scan, ctx, source, offset + line_index, base + line_index + 1, pid)
            # the figures the run logs, in the chunk's first and last lines (metrics.py)
            scan.metrics.read(source, base, body)
            base += window.n_lines
            previous = window
        scan.lines += base

    def _on_hit(
        self, scan: Scan, ctx: LineContext, source: int, i: int, lineno: int, pid: int
    ) -> None:
        info = ctx.resolve(i)
        if info.rank is not None and not info.explicit and "failed (exitcode" in info.text[:1000]:
            # the elastic agent names the worker by its local rank on that agent's node
            f = LAUNCHER_FAILED_RE.search(info.text[:1000])
            if f:
                local = int(f.group("a") or f.group("b"))
                info = replace(info, rank=scan.evidence.layout.global_rank(local, info.host))
        elif info.local and info.rank is not None:
            # `node-2: [default1]:` is local rank 1 of that node: global only where the log
            # gives the node's place; on a one-node job the local rank is the global one
            layout = scan.evidence.layout
            layout.note_host(info.host)
            if layout.multi_node():
                info = replace(info, rank=layout.global_rank(info.rank, info.host))
        if info.rank is None and scan.evidence.nccl_ranks and "NCCL" in info.text[:300]:
            # NCCL's `host:pid:tid [dev]` prefix names no rank, but the pid stated one earlier
            rank = scan.evidence.nccl_ranks.get(nccl_process(info.text) or ("", -1))
            if rank is not None:
                info = replace(info, rank=rank)
        if info.rank is None and scan.source_ranks[source] is not None:
            info = replace(info, rank=scan.source_ranks[source])
        if info.rank is not None:
            scan.ranks_seen.add(info.rank)
        if pid >= self.internal_base:
            self._on_internal(
                scan, ctx, self.internal_names[pid - self.internal_base], i, info, source, lineno
            )
            return
        sig = self.signals[pid]
        text = info.text
        window = text if len(text) <= 4 * CONFIRM_WINDOW else text[: 4 * CONFIRM_WINDOW]
        m = sig.regex.search(window)
        if m is None:
            return
        hit = Hit(source, lineno, info.rank, info.host, info.ts, ctx.lines[i][:HIT_CHARS])
        loose = scan.loose_hits.setdefault(pid, [])
        if len(loose) < 5:
            loose.append(hit)
        if sig.numeric is not None and not sig.numeric.holds(m.groupdict()):
            return
        if sig.in_frame is not None:
            before = ctx.frames(i)
            frames = [f[:1000] for f in before] + [text[:1000]]
            if not any(sig.in_frame.search(f) for f in frames):
                # a message printed before its traceback: read the traceback that follows
                if any(FRAME_LINE_RE.match(f) for f in before):
                    return
                if not any(sig.in_frame.search(f[:1000]) for f in ctx.frames_after(i)):
                    return
        if sig.cut_traceback:
            if len(scan.cut_hits) < MAX_PENDING:
                scan.cut_hits.append((pid, hit))
            return
        stream: Stream = (source, info.host, info.rank)
        if sig.kind == "error":
            at = (source, lineno)
            scan.last_error[sig.entry] = max(scan.last_error.get(sig.entry, at), at)
            scan.last_trouble = max(scan.last_trouble, at)
            if info.rank is None and _RAISED_RE.match(text):
                raises = scan.unranked_raises.setdefault(sig.entry, set())
                if len(raises) < MAX_UNRANKED_RAISES and ctx.chained_after(i) is None:
                    raises.add((pid, *at))
        if sig.within_lines is not None:
            if len(scan.pending) < MAX_PENDING:
                if sig.kind == "error":
                    _mark_chain(ctx, i, lineno, hit)
                scan.pending.append((pid, stream, hit))
            return
        if sig.kind == "error":
            anchors = scan.anchors.setdefault((sig.entry, stream), [])
            if len(anchors) < MAX_ANCHORS:
                anchors.append(lineno)
        per_rank = scan.first_hits.setdefault(pid, {})
        if info.rank not in per_rank:
            # only kept hits need the (look-back) chain walk
            if sig.kind == "error":
                _mark_chain(ctx, i, lineno, hit)
            per_rank[info.rank] = hit

    def _on_internal(
        self,
        scan: Scan,
        ctx: LineContext,
        name: str,
        i: int,
        info: LineInfo,
        source: int,
        lineno: int,
    ) -> None:
        if name in ("traceback", "exception"):
            self._note_resumption(scan, ctx, i, source, lineno)
            scan.last_trouble = max(scan.last_trouble, (source, lineno))
            if info.rank is not None and len(scan.evidence.troubled) < MAX_MARKED_RANK:
                scan.evidence.troubled.add(info.rank)
        if name == "traceback":
            scan.tracebacks += 1
        elif name == "exception":
            scan.last_raise = max(scan.last_raise, (source, lineno))
            if info.rank is not None and CRASH_EXIT_RE.search(info.text[:2000]):
                scan.evidence.crashed.add(info.rank)
            spawned = spawn_exit(info.text[:2000])
            if spawned is not None and scan.evidence.launcher_failed is None:
                # torch.multiprocessing.spawn's word on the process it saw die, as the elastic
                # agent's "failed (exitcode: …) local_rank: N" is
                scan.evidence.launcher_failed = spawned
            hit = Hit(source, lineno, info.rank, info.host, info.ts, ctx.lines[i][:HIT_CHARS])
            scan.exceptions.setdefault(info.rank, hit)
            if len(scan.error_lines) < MAX_ERROR_LINES:
                scan.error_lines.append(hit)
            else:
                scan.error_tail.append(hit)
        elif name == "launcher_rank":
            m = LAUNCHER_RANK_RE.match(info.text)
            if m and scan.evidence.launcher_root is None:
                # a paste can put the time and host fields between the head and the rank
                for j in range(i - 1, max(-1, i - 9), -1):
                    if ROOT_CAUSE_HEAD in ctx.parsed(j).text:
                        scan.evidence.launcher_root = int(m.group(1))
                        break
        elif name == "launcher_failed":
            f = LAUNCHER_FAILED_RE.search(info.text[:1000])
            if f and scan.evidence.launcher_failed is None:
                local = int(f.group("a") or f.group("b"))
                scan.evidence.launcher_failed = (
                    scan.evidence.layout.global_rank(local, info.host),
                    int(f.group("code")),
                )
                _note_crash(scan, *scan.evidence.launcher_failed)
        elif name == "launch":
            scan.run.observe(info.text)
        elif name == "mpi_exit":
            if scan.evidence.launcher_failed is None:
                after = [ctx.lines[j][:200] for j in range(i + 1, min(len(ctx.lines), i + 3))]
                scan.evidence.launcher_failed = mpi_exit(info.text[:1000], after)
                if scan.evidence.launcher_failed is not None:
                    _note_crash(scan, *scan.evidence.launcher_failed)
        elif name == "ds_exit":
            if scan.evidence.launcher_failed is None:
                after = [ctx.lines[j][:2000] for j in range(i + 1, min(len(ctx.lines), i + 3))]
                found = deepspeed_exit(info.text[:20_000], after)
                if found is not None:
                    local, code = found
                    layout = scan.evidence.layout
                    # behind a host prefix (DeepSpeed's pdsh runner: several nodes) the local
                    # rank is global only where that node's place is stated
                    known = info.host is None or layout.states_node(info.host)
                    rank = layout.global_rank(local, info.host) if known else None
                    scan.evidence.launcher_failed = (rank, code)
                    scan.evidence.launcher_caveat = DS_CAVEAT
        elif name == "nccl_rank":
            stated = nccl_rank(info.text[:2000])
            if stated is not None and len(scan.evidence.nccl_ranks) < MAX_NCCL_PIDS:
                scan.evidence.nccl_ranks.setdefault(*stated)
                scan.ranks_seen.add(stated[1])
        elif name == "layout":
            scan.evidence.layout.observe(info.host, info.text)
        elif name == "recovery":
            if len(scan.recoveries) < MAX_ANCHORS:
                scan.recoveries.append((source, lineno))
        else:
            scan.evidence.observe(info.rank, info.text)
            if name == "mismatch":
                site = ctx.call_site(i)
                scan.evidence.note_mismatch(
                    info.text,
                    source,
                    None if site is None else (lineno - (i - site[0]), site[1]),
                )

    def _note_resumption(
        self, scan: Scan, ctx: LineContext, i: int, source: int, lineno: int
    ) -> None:
        """Remember the previous trouble line when training progress separates it from this one.

        Only the look-back window is read (at most LOOKBACK_LINES lines, stopping at the
        count needed), and only on trouble lines that follow a gap.
        """
        src, last = scan.last_trouble
        gap = lineno - last - 1
        if src != source or gap < RECOVERY_PROGRESS_LINES or len(scan.resumed_after) >= MAX_ANCHORS:
            return
        found = 0
        for j in range(i - 1, max(-1, i - 1 - min(gap, LOOKBACK_LINES)), -1):
            if is_training_line(ctx.lines[j]):
                found += 1
                if found >= RECOVERY_PROGRESS_LINES:
                    scan.resumed_after.append(scan.last_trouble)
                    return

    def held(self, scan: Scan) -> dict[int, dict[int | None, Hit]]:
        """Signal index -> first hit per rank, for every signal whose conditions held."""
        held = {pid: dict(per_rank) for pid, per_rank in scan.first_hits.items()}
        for lines in scan.anchors.values():
            lines.sort()  # signals are processed one after the other: restore line order
        for pid, stream, hit in scan.pending:
            sig = self.signals[pid]
            assert sig.within_lines is not None
            if self._near_anchor(scan, sig, stream, hit.line):
                held.setdefault(pid, {}).setdefault(hit.rank, hit)
        if scan.cut_hits and ends_in_traceback(scan):
            end_source = scan.tail_at[-1][0]
            for pid, hit in scan.cut_hits:
                if hit.source == end_source and (hit.source, hit.line) > scan.last_raise:
                    held.setdefault(pid, {}).setdefault(hit.rank, hit)
        return held

    def _near_anchor(self, scan: Scan, sig: Signal, stream: Stream, line: int) -> bool:
        source, host, rank = stream
        assert sig.within_lines is not None
        for (entry, (src, h, r)), lines in scan.anchors.items():
            if entry != sig.entry or src != source or h != host:
                continue
            if r is not None and rank is not None and r != rank:
                continue
            # sorted in _held: the nearest anchor is found by bisection
            at = bisect.bisect_left(lines, line - sig.within_lines)
            if at < len(lines) and lines[at] <= line + sig.within_lines:
                return True
        return False
