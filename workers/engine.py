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

from encyclopedia.catalogue_files import catalogue_version, load_entries
from workers.evidence import LOOKBACK_LINES, ChunkLines, LineContext, LineInfo
from workers.matching import CONFIRM_WINDOW, Matcher, Signal, signals_of
from workers.ranks import (
    LAUNCHER_RANK_RE,
    ROOT_CAUSE_HEAD,
    CrossRankEvidence,
    FirstError,
    initiating_rank,
)
from workers.remediation import fixes_included, remediation_for

Entry = dict[str, Any]
Result = dict[str, Any]

# Below this an entry's score is noise: the outcome is no_match.
MIN_CONFIDENCE = 0.3
MAX_EVIDENCE = 6
EVIDENCE_CHARS = 300
HIT_CHARS = 2 * EVIDENCE_CHARS  # what a remembered hit keeps of its line
MAX_ANCHORS = 2000
MAX_PENDING = 2000

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
    "named_rank": r"did not receive grad for rank \d|failed to pass monitoredBarrier",
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
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=6))


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
            for line in window[-6:]:
                if line.strip():
                    scan.tail.append(line)
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
        if sig.within_lines is not None:
            if len(scan.pending) < MAX_PENDING:
                scan.pending.append((pid, stream, hit))
            return
        if sig.kind == "error":
            anchors = scan.anchors.setdefault((sig.entry, stream), [])
            if len(anchors) < MAX_ANCHORS:
                anchors.append(lineno)
        scan.first_hits.setdefault(pid, {}).setdefault(info.rank, hit)

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
        if name == "traceback":
            scan.tracebacks += 1
        elif name == "exception":
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
        ranked = [e for e in ranked if scores[e] >= MIN_CONFIDENCE]
        if not ranked:
            return self._no_match(scan, scores)
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
        evidence = self._evidence(held, by_entry[winner], rank, scan.sources)
        first = evidence[0]["text"] if evidence else ""
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
            "remediation": remediation_for(entry, include_fix=fixes_included(None)),
            "missing_facts": missing,
            "encyclopedia_url": f"/encyclopedia/{entry['slug']}/",
            "catalogue_version": self.version,
        }

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
    ) -> list[dict[str, Any]]:
        chosen: dict[tuple[int, int], str] = {}
        order = sorted(
            pids, key=lambda p: (self.signals[p].kind != "error", -self.signals[p].weight)
        )
        for p in order:
            hits = held[p]
            hit = (
                hits.get(rank)
                if rank in hits
                else min(hits.values(), key=lambda h: (h.source, h.line))
            )
            assert hit is not None
            chosen[(hit.source, hit.line)] = _short(hit.text)
            if len(chosen) >= MAX_EVIDENCE:
                break
        if len(sources) > 1:  # merged per-rank files: a line number needs its file
            return [
                {"file": sources[src], "line": line, "text": text}
                for (src, line), text in sorted(chosen.items())
            ]
        return [{"line": line, "text": text} for (_, line), text in sorted(chosen.items())]

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
            "remediation": None,
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
