"""The diagnosis engine: masked log chunks in, the DESIGN.md result (less id/status/masking) out.

One pass over line-aligned chunks: Hyperscan flags the lines that match a fingerprint or one of
the engine's own markers, and only those lines get Python work (prefix, rank, time, traceback
look-back, confirmation). State is bounded whatever the log size: first hits per signal and
rank, a capped list of anchor lines, the last lines of the log, and the look-back window.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from rootcause.catalogue import catalogue_version, load_entries
from rootcause.evidence import LOOKBACK_LINES, ChunkLines, LineContext, LineInfo
from rootcause.matching import CONFIRM_WINDOW, Matcher, Signal, signals_of
from rootcause.ranks import (
    CRASH_EXIT_RE,
    DISTINCT_FIRST_SECONDS,
    LAUNCHER_RANK_RE,
    ROOT_CAUSE_HEAD,
    CrossRankEvidence,
    FirstError,
    initiating_rank,
)

Entry = dict[str, Any]
Result = dict[str, Any]

# Below this an entry's score is noise: the outcome is no_match.
MIN_CONFIDENCE = 0.3
MAX_EVIDENCE = 6
EVIDENCE_CHARS = 300
HIT_CHARS = 2 * EVIDENCE_CHARS  # what a remembered hit keeps of its line
MAX_ANCHORS = 2000
MAX_PENDING = 2000
# An exception line ("RuntimeError: ...") as Python prints the last line of a traceback.
_RAISED_RE = re.compile(r"^[A-Za-z_][\w.]{0,120}(?:Error|Exception)\b: ")
MAX_UNRANKED_RAISES = 50
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
    "named_rank": (
        r"did not receive grad for rank \d|failed to pass monitoredBarrier|"
        r"waiting for send/recv from rank \d"
    ),
    "launcher_rank": r"rank\s*:\s*\d+\s*\(local_rank",
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
_TRAINING_LINE_RE = re.compile(
    r"(?i)\b(?:step|epoch|iter|iteration)\b[ =:\[]{0,3}\d|"
    r"\b(?:train_|val_|eval_)?loss['\"]?\s{0,3}[:=]\s{0,3}[0-9]"
)
# What a line says when it reports a failure (as opposed to a memory report or a loss value).
_FAILURE_WORDS_RE = re.compile(
    r"(?i)error|fail|out of memory|exception|fatal|abort|killed|cannot|unable|exceeded|timed? ?out"
)
_PROGRESS_RE = re.compile(
    r"\d+/\d+ \[\d|\bstep[ =:]+\d+|\bepoch[ =:]+\d+|\bloss[ =:]+[0-9.]+|it/s\]|s/it\]"
)

Stream = tuple[int, str | None, int | None]  # (source index, host, rank)


@dataclass
class Hit:
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
    unranked_raises: dict[int, set[tuple[int, int]]] = field(default_factory=dict)
    # positions of trouble lines (traceback / exception) after which training went on for at
    # least RECOVERY_PROGRESS_LINES progress lines before the next trouble line
    resumed_after: list[tuple[int, int]] = field(default_factory=list)


_NAME_RANK_RE = re.compile(r"(?i)(?:rank|worker|proc|process|node|gpu)[_.-]?(\d{1,5})(?!.*\d)")


def _rank_from_name(name: str, index: int) -> int:
    m = _NAME_RANK_RE.search(name.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else index


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1] + "…"


def _first_sentence(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    m = re.match(rf"(.{{20,{limit}}}?[.!?])(\s|$)", text)
    if m:
        return m.group(1)
    if len(text) <= limit:
        return text
    cut = max(text.rfind(", ", 0, limit), text.rfind("; ", 0, limit), text.rfind(": ", 0, limit))
    return text[: cut if cut > limit // 2 else limit].rstrip() + "…"


def _mark_chain(ctx: LineContext, i: int, lineno: int, hit: Hit) -> None:
    chain = ctx.chained_after(i)
    if chain is not None:
        hit.chained = (lineno + chain[0], lineno + chain[1])


class Engine:
    """A compiled catalogue. Build once per process (get_engine) and call diagnose per log."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.version = catalogue_version(entries)
        self.signals: list[Signal] = signals_of(entries)
        self.internal_base = len(self.signals)
        self.internal_names = list(INTERNAL)
        self.marker_base = self.internal_base + len(INTERNAL)
        self.matcher = Matcher(
            [s.regex.pattern for s in self.signals] + list(INTERNAL.values()) + RANK_MARKERS,
            single=set(range(self.marker_base, self.marker_base + len(RANK_MARKERS))),
        )
        self.by_slug = {e["slug"]: e for e in entries}

    def diagnose(self, chunks: Iterable[str]) -> Result:
        return self.diagnose_sources([("log", chunks)])

    def diagnose_sources(self, sources: Iterable[tuple[str, Iterable[str]]]) -> Result:
        """Several per-rank files of one job: each is scanned as its own stream of lines.

        With more than one file, lines that carry no rank take the file's rank: the number in
        its name (`rank3.log`, `worker-3.out`), else its position in the list.
        """
        sources = list(sources)
        scan = Scan()
        for index, (name, chunks) in enumerate(sources):
            scan.sources.append(name)
            default = _rank_from_name(name, index) if len(sources) > 1 else None
            scan.source_ranks.append(default)
            if default is not None:
                scan.ranks_seen.add(default)
            self._scan_source(scan, index, chunks)
        return self._result(scan)

    def search(self, text: str, limit: int = 10) -> list[dict[str, Any]]:
        """Entries whose signals match pasted error text, best first (no threshold)."""
        scan = Scan(sources=["search"], source_ranks=[None])
        self._scan_source(scan, 0, [text if text.endswith("\n") else text + "\n"])
        scores: dict[int, list[int]] = {}
        for sig_index in scan.loose_hits:
            scores.setdefault(self.signals[sig_index].entry, []).append(sig_index)
        found = []
        for entry_index, sigs in scores.items():
            entry = self.entries[entry_index]
            score = 1 - math.prod(1 - self.signals[s].weight for s in sigs)
            if not any(self.signals[s].kind == "error" for s in sigs):
                score *= 0.5
            lines = sorted({(h.line, _short(h.text)) for s in sigs for h in scan.loose_hits[s][:3]})
            found.append(
                {
                    "slug": entry["slug"],
                    "title": entry["title"],
                    "score": round(score, 3),
                    "lines": [{"line": n, "text": t} for n, t in lines[:5]],
                }
            )
        found.sort(key=lambda f: (-f["score"], f["slug"]))
        return found[:limit]

    def _scan_source(self, scan: Scan, source: int, chunks: Iterable[str]) -> None:
        tail: Sequence[str] = []
        base = 0  # lines before the current chunk
        for chunk in chunks:
            if not chunk:
                continue
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
            base += window.n_lines
            tail = window.last(LOOKBACK_LINES)
        scan.lines += base

    def _on_hit(
        self, scan: Scan, ctx: LineContext, source: int, i: int, lineno: int, pid: int
    ) -> None:
        info = ctx.resolve(i)
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
            frames = [f[:1000] for f in ctx.frames(i)] + [text[:1000]]
            if not any(sig.in_frame.search(f) for f in frames):
                return
        stream: Stream = (source, info.host, info.rank)
        if sig.kind == "error":
            at = (source, lineno)
            scan.last_error[sig.entry] = max(scan.last_error.get(sig.entry, at), at)
            scan.last_trouble = max(scan.last_trouble, at)
            if info.rank is None and _RAISED_RE.match(text):
                raises = scan.unranked_raises.setdefault(sig.entry, set())
                if len(raises) < MAX_UNRANKED_RAISES and ctx.chained_after(i) is None:
                    raises.add(at)
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
        if name == "traceback":
            scan.tracebacks += 1
        elif name == "exception":
            if info.rank is not None and CRASH_EXIT_RE.match(info.text):
                scan.evidence.crashed.add(info.rank)
            if info.rank not in scan.exceptions:
                scan.exceptions[info.rank] = Hit(
                    source, lineno, info.rank, info.host, info.ts, ctx.lines[i][:HIT_CHARS]
                )
        elif name == "launcher_rank":
            m = LAUNCHER_RANK_RE.match(info.text)
            if m and scan.evidence.launcher_root is None:
                for j in range(i - 1, max(-1, i - 5), -1):
                    if ROOT_CAUSE_HEAD in ctx.parsed(j).text:
                        scan.evidence.launcher_root = int(m.group(1))
                        break
        else:
            scan.evidence.observe(info.rank, info.text)

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
            if _TRAINING_LINE_RE.search(ctx.lines[j][:400]):
                found += 1
                if found >= RECOVERY_PROGRESS_LINES:
                    scan.resumed_after.append(scan.last_trouble)
                    return

    def _held(self, scan: Scan) -> dict[int, dict[int | None, Hit]]:
        """Signal index -> first hit per rank, for every signal whose conditions held."""
        held = {pid: dict(per_rank) for pid, per_rank in scan.first_hits.items()}
        for lines in scan.anchors.values():
            lines.sort()  # signals are processed one after the other: restore line order
        for pid, stream, hit in scan.pending:
            sig = self.signals[pid]
            assert sig.within_lines is not None
            if self._near_anchor(scan, sig, stream, hit.line):
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

    def _result(self, scan: Scan) -> Result:
        held = self._held(scan)
        by_entry: dict[int, list[int]] = {}
        for pid in held:
            by_entry.setdefault(self.signals[pid].entry, []).append(pid)
        # error signals of an entry held through within_lines also count as its errors
        scores: dict[int, float] = {}
        for entry_index, pids in by_entry.items():
            if not any(self.signals[p].kind == "error" for p in pids):
                continue
            scores[entry_index] = 1 - math.prod(1 - self.signals[p].weight for p in pids)

        def collateral(index: int) -> bool:
            return bool(self.entries[index]["fingerprints"].get("collateral", False))

        def first_error(index: int, pid_filter: Iterable[int]) -> Hit:
            hits = [h for p in pid_filter for h in held[p].values()]
            return min(hits, key=lambda h: (h.source, h.line))

        ranked = sorted(
            scores,
            key=lambda e: (
                collateral(e),
                -round(scores[e], 3),
                first_error(e, self._error_pids(by_entry[e])).line,
            ),
        )
        ranked = [
            e
            for e in ranked
            if scores[e] >= MIN_CONFIDENCE and not self._recovered(scan, held, by_entry[e], e)
        ]
        ranked = self._drop_resumed(scan, held, by_entry, ranked, collateral)
        if not ranked:
            return self._no_match(scan, scores)
        ranked = self._root_of_chain(held, by_entry, ranked, collateral)
        ranked = self._first_in_time(held, by_entry, ranked, collateral)
        winner = ranked[0]
        entry = self.entries[winner]

        root_errors = self._first_errors_by_rank(held, by_entry[winner])
        collateral_errors: dict[int, FirstError] = {}
        for e in ranked[1:]:
            if collateral(e):
                for r, fe in self._first_errors_by_rank(held, by_entry[e]).items():
                    if r not in collateral_errors or fe.order < collateral_errors[r].order:
                        collateral_errors[r] = fe
        if collateral(winner):
            collateral_errors, root_errors = root_errors, {}
        rank, rank_reason = initiating_rank(
            root_errors=root_errors,
            collateral_errors=collateral_errors,
            evidence=scan.evidence,
            ranks_seen=scan.ranks_seen,
            unranked_roots=0 if collateral(winner) else self._unranked_occurrences(scan, winner),
        )
        if not scan.ranks_seen and rank is None:
            rank_reason = "single process"
        confidence = scores[winner]
        rivals = [e for e in ranked[1:] if not collateral(e) and not collateral(winner)]
        if rivals and scores[rivals[0]] > confidence - 0.1:
            confidence *= 0.85  # two root causes nearly tie: say so through the confidence

        ranks = self._ranks(held, by_entry, scores, winner, rank)
        collateral_list = [
            {
                "slug": self.entries[e]["slug"],
                "ranks": sorted(r for r in self._ranks_of(held, by_entry[e]) if r is not None),
            }
            for e in ranked[1:]
            if collateral(e)
        ]
        evidence, first = self._evidence(held, by_entry[winner], rank, scan.sources)
        root_cause = _first_sentence(str(entry.get("quick_answer") or entry["title"]))
        if rank is not None:
            root_cause += f" Rank {rank} failed first ({rank_reason})"
            root_cause += f": {first}" if first else "."
        else:
            if len(scan.ranks_seen) > 1:
                root_cause += f" No rank is singled out: {rank_reason}."
            if first:
                root_cause += f" First error: {first}"
        missing = self._missing_facts(
            scan, diagnosed=True, rank=rank, multi=len(scan.ranks_seen) > 1
        )
        if confidence < 0.6 and scan.tracebacks == 0:
            missing.append(
                "no traceback: the class rests on error lines alone; include the full stderr "
                "(the traceback shows the call that failed; for a killed process add "
                "`dmesg | tail`)"
            )
        return {
            "outcome": "diagnosed",
            "failure": {
                "slug": entry["slug"],
                "title": entry["title"],
                "category": entry["category"],
                "confidence": round(min(confidence, 0.99), 2),
            },
            "root_cause": root_cause,
            "initiating_rank": rank,
            "ranks": ranks,
            "collateral": collateral_list,
            "evidence": evidence,
            "missing_facts": missing,
            "encyclopedia_url": f"/encyclopedia/{entry['slug']}/",
            "catalogue_version": self.version,
        }

    def _unranked_occurrences(self, scan: Scan, entry: int) -> int:
        """How many separate exceptions of the entry were raised on lines that carry no rank."""
        return len(scan.unranked_raises.get(entry, ()))

    def _root_of_chain(
        self,
        held: dict[int, dict[int | None, Hit]],
        by_entry: dict[int, list[int]],
        ranked: list[int],
        collateral: Any,
    ) -> list[int]:
        """Put first the entry whose error was the first exception of a chain.

        When the leader's errors were all raised while handling an earlier exception, and
        another root-cause entry matched that earlier exception, the earlier one is the cause
        (the later one is the handler failing in turn: an emergency save, a fallback load).
        """
        leader = ranked[0]
        if collateral(leader):
            return ranked
        hits = [h for p in self._error_pids(by_entry[leader]) for h in held[p].values()]
        if not hits or any(h.chained is None for h in hits):
            return ranked
        for e in ranked[1:]:
            if collateral(e):
                continue
            for p in self._error_pids(by_entry[e]):
                for h in held[p].values():
                    if any(
                        h.source == c.source
                        and c.chained is not None
                        and c.chained[0] <= h.line < c.chained[1]
                        for c in hits
                    ):
                        return [e] + [x for x in ranked if x != e]
        return ranked

    def _first_in_time(
        self,
        held: dict[int, dict[int | None, Hit]],
        by_entry: dict[int, list[int]],
        ranked: list[int],
        collateral: Any,
    ) -> list[int]:
        """Put first the root-cause entry raised clearly earlier, on other ranks, than the leader.

        Two different root-cause errors on different ranks of one job: the later one met a job
        that was already failing (an emergency save filling the disk after another rank ran out
        of memory), whatever the scores say. Only when every error of both carries a rank; by
        time stamp when both have them (DISTINCT_FIRST_SECONDS apart), else by order when both
        are in the same file.
        """
        leader = ranked[0]
        if collateral(leader):
            return ranked

        def start(e: int) -> tuple[set[int], FirstError] | None:
            pids = self._error_pids(by_entry[e])
            if any(None in held[p] for p in pids):
                return None
            firsts = self._first_errors_by_rank(held, pids)
            if not firsts:
                return None
            timed = all(fe.ts is not None for fe in firsts.values())
            key = (lambda f: (f.ts, f.order)) if timed else (lambda f: (0.0, f.order))
            return set(firsts), min(firsts.values(), key=key)

        def earlier(a: FirstError, b: FirstError) -> bool:
            if a.ts is not None and b.ts is not None:
                return a.ts <= b.ts - DISTINCT_FIRST_SECONDS
            if a.ts is None and b.ts is None:
                return a.order[0] == b.order[0] and a.order < b.order
            return False

        lead = start(leader)
        if lead is None:
            return ranked
        best, best_first = leader, lead[1]
        for e in ranked[1:]:
            other = None if collateral(e) else start(e)
            if other and not other[0] & lead[0] and earlier(other[1], best_first):
                best, best_first = e, other[1]
        return [best] + [x for x in ranked if x != best]

    def _recovered(
        self, scan: Scan, held: dict[int, dict[int | None, Hit]], pids: list[int], entry: int
    ) -> bool:
        """The entry's failure was reported and then the run carried on: it was caught.

        Its last error line is followed by several progress lines and by no error, exception
        or traceback of any kind, and its lines read as a failure report (a loss value or a
        memory report that training went on after is still the class's evidence).
        """
        last = scan.last_error.get(entry)
        if last is None or len(scan.sources) != 1 or last < scan.last_trouble:
            return False
        # the tail holds the non-empty ones of the log's last lines
        training = sum(
            bool(_TRAINING_LINE_RE.search(t[:400]))
            for t, at in zip(scan.tail, scan.tail_at, strict=True)
            if at > last
        )
        if training < RECOVERY_PROGRESS_LINES:
            return False
        hits = [h for p in self._error_pids(pids) for h in held[p].values()]
        if len(scan.ranks_seen) > 1 and any(h.rank is not None for h in hits):
            # progress lines carry no rank here: they may be other ranks running on for a
            # while after this one failed
            return False
        return all(_FAILURE_WORDS_RE.search(h.text) for h in hits)

    def _drop_resumed(
        self,
        scan: Scan,
        held: dict[int, dict[int | None, Hit]],
        by_entry: dict[int, list[int]],
        ranked: list[int],
        collateral: Any,
    ) -> list[int]:
        """Drop an entry whose failure training went on after, when a later one ended the run.

        A caught error (an OOM retried with a smaller batch, printed with its traceback) is
        followed by progress lines and then by the error that really stopped the run: when
        another root-cause entry's error comes after that resumption, the caught one is not
        the cause. Same conditions as the recovery rule: one file, no rank on the error lines
        of a multi-rank log, and lines that read as a failure report.
        """
        if len(scan.sources) != 1 or not scan.resumed_after or len(ranked) < 2:
            return ranked
        multi = len(scan.ranks_seen) > 1

        def resumed(e: int) -> tuple[int, int] | None:
            last = scan.last_error.get(e)
            after = [p for p in scan.resumed_after if last is not None and p >= last]
            if not after:
                return None
            hits = [h for p in self._error_pids(by_entry[e]) for h in held[p].values()]
            if multi and any(h.rank is not None for h in hits):
                return None
            if not all(_FAILURE_WORDS_RE.search(h.text) for h in hits):
                return None
            return min(after)

        dropped = set()
        for e in ranked:
            if collateral(e):
                continue
            resumption = resumed(e)
            if resumption is None:
                continue
            later = any(
                not collateral(x) and x != e and scan.last_error.get(x, (-1, -1)) > resumption
                for x in ranked
            )
            if later:
                dropped.add(e)
        return [e for e in ranked if e not in dropped] if dropped else ranked

    def _error_pids(self, pids: list[int]) -> list[int]:
        errors = [p for p in pids if self.signals[p].kind == "error"]
        return errors or pids

    def _first_errors_by_rank(
        self, held: dict[int, dict[int | None, Hit]], pids: list[int]
    ) -> dict[int, FirstError]:
        out: dict[int, FirstError] = {}
        for p in self._error_pids(pids):
            for rank, h in held[p].items():
                if rank is None:
                    continue
                fe = FirstError(h.ts, (h.source, h.line), h.line, h.text, self.signals[p].id)
                if rank not in out or fe.order < out[rank].order:
                    out[rank] = fe
        return out

    def _ranks_of(self, held: dict[int, dict[int | None, Hit]], pids: list[int]) -> set[int | None]:
        return {r for p in self._error_pids(pids) for r in held[p]}

    def _ranks(
        self,
        held: dict[int, dict[int | None, Hit]],
        by_entry: dict[int, list[int]],
        scores: dict[int, float],
        winner: int,
        initiating: int | None,
    ) -> list[dict[str, Any]]:
        best: dict[int, tuple[int, int]] = {}  # rank -> (entry, first line)
        for e in sorted(scores, key=lambda e: (e != winner, -scores[e])):
            for rank, fe in self._first_errors_by_rank(held, by_entry[e]).items():
                if rank not in best:
                    best[rank] = (e, fe.line)
        return [
            {
                "rank": rank,
                "slug": self.entries[e]["slug"],
                "first_error_line": line,
                # a collateral class, or a rank that failed after the initiating one
                "collateral": bool(self.entries[e]["fingerprints"].get("collateral"))
                or (initiating is not None and rank != initiating),
            }
            for rank, (e, line) in sorted(best.items())
        ]

    def _evidence(
        self,
        held: dict[int, dict[int | None, Hit]],
        pids: list[int],
        rank: int | None,
        sources: list[str],
    ) -> tuple[list[dict[str, Any]], str]:
        """The evidence lines in log order, and the line of the strongest error signal: the one
        the root cause quotes (the first line by position may be a frame above the error)."""
        chosen: dict[tuple[int, int], str] = {}
        order = sorted(
            pids, key=lambda p: (self.signals[p].kind != "error", -self.signals[p].weight)
        )
        headline = ""
        for p in order:
            hits = held[p]
            hit = (
                hits.get(rank)
                if rank in hits
                else min(hits.values(), key=lambda h: (h.source, h.line))
            )
            assert hit is not None
            chosen[(hit.source, hit.line)] = _short(hit.text)
            headline = headline or chosen[(hit.source, hit.line)]
            if len(chosen) >= MAX_EVIDENCE:
                break
        if len(sources) > 1:  # merged per-rank files: a line number needs its file
            return [
                {"file": sources[src], "line": line, "text": text}
                for (src, line), text in sorted(chosen.items())
            ], headline
        return [
            {"line": line, "text": text} for (_, line), text in sorted(chosen.items())
        ], headline

    def _no_match(self, scan: Scan, scores: dict[int, float]) -> Result:
        evidence = [
            {"line": h.line, "text": _short(h.text)}
            for h in sorted(scan.exceptions.values(), key=lambda h: (h.source, h.line))[:3]
        ]
        missing = self._missing_facts(scan, diagnosed=False, rank=None, multi=False)
        if scores:
            best = max(scores, key=lambda e: scores[e])
            missing.insert(
                0,
                "the evidence is too thin to settle the cause (closest: "
                f"{self.entries[best]['slug']}, score {scores[best]:.2f}): include the full "
                "traceback of the failing rank and the lines just before it",
            )
        return {
            "outcome": "no_match",
            "failure": None,
            "root_cause": None,
            "initiating_rank": None,
            "ranks": [],
            "collateral": [],
            "evidence": evidence,
            "missing_facts": missing,
            "encyclopedia_url": None,
            "catalogue_version": self.version,
        }

    def _missing_facts(
        self, scan: Scan, *, diagnosed: bool, rank: int | None, multi: bool
    ) -> list[str]:
        facts = []
        if scan.chars == 0 or not scan.tail:
            return ["the log is empty: paste or upload the whole output of the failed run"]
        if not diagnosed:
            if scan.tracebacks == 0 and not scan.exceptions:
                facts.append(
                    "no traceback or error line: include the stderr of every rank, not only stdout"
                )
            elif scan.exceptions:
                facts.append(
                    "the error found matches no known failure: include the full traceback, the "
                    "command line and the versions of torch, CUDA and NCCL"
                )
            if scan.tail and _PROGRESS_RE.search(scan.tail[-1][-400:]):
                facts.append(
                    "the log stops before the error: include the end of the output, after the "
                    "last training step"
                )
        elif multi and rank is None:
            facts.append(
                "which rank failed first cannot be told: include the logs of every rank with "
                "timestamps (e.g. torchrun --tee 3 and logging with %(asctime)s)"
            )
        return facts


@cache
def get_engine() -> Engine:
    """The engine over the catalogue shipped in the package, compiled once per process."""
    return Engine(load_entries())
