"""The engine: a compiled catalogue that turns masked log chunks into a DiagnosisResult.

Reading is `scanning`, deciding is `rules`, writing the result is `report`; the engine holds the
compiled catalogue they share and runs them in that order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import cache

from rootcause.catalogue import Entry, catalogue_version, load_entries
from rootcause.engine import metrics, report, rules
from rootcause.engine.scanning import Hit, Scan, Scanner, rank_from_name
from rootcause.matching import Signal, signals_of
from rootcause.result import DiagnosisResult, EvidenceLine, MatchedLine, SearchMatch


class Engine:
    """A compiled catalogue. Build once per process (get_engine) and call diagnose per log."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.version = catalogue_version(entries)
        self.signals: list[Signal] = signals_of(entries)
        self.scanner = Scanner(self.signals)
        self.by_slug = {e.slug: e for e in entries}
        # the engine's own signals (metrics.py), after the catalogue's, for the classes it holds
        self.all_signals = self.signals + _metric_signals(entries)
        self.metric_pids = {
            (s.slug, s.id): pid
            for pid, s in enumerate(self.all_signals)
            if pid >= len(self.signals)
        }

    def diagnose(self, chunks: Iterable[str]) -> DiagnosisResult:
        return self.diagnose_sources([("log", chunks)])

    def diagnose_sources(self, sources: Iterable[tuple[str, Iterable[str]]]) -> DiagnosisResult:
        """Several per-rank files of one job: each is scanned as its own stream of lines.

        With more than one file, lines that carry no rank take the file's rank: the number in
        its name (`rank3.log`, `worker-3.out`), else its position in the list.
        """
        sources = list(sources)
        scan = Scan()
        for index, (name, chunks) in enumerate(sources):
            scan.sources.append(name)
            default = rank_from_name(name, index) if len(sources) > 1 else None
            scan.source_ranks.append(default)
            if default is not None:
                scan.ranks_seen.add(default)
            self.scanner.scan_source(scan, index, chunks)
        held = rules.Held(self.all_signals, self.entries, self._held(scan))
        ranked = rules.candidates(held, scan)
        if not ranked:
            return report.no_match(held, scan, self.version)
        outside = report.outside_catalogue(held, scan, ranked)
        if outside is not None:
            return report.no_match(held, scan, self.version, outside)
        return report.diagnosed(held, scan, ranked, self.version)

    def _held(self, scan: Scan) -> dict[int, dict[int | None, Hit]]:
        """The catalogue's signals that held, and the findings of the logged figures."""
        held = self.scanner.held(scan)
        tail = list(zip(scan.tail, scan.tail_at, strict=True))
        for found in metrics.findings(scan.metrics, tail):
            pid = self.metric_pids.get((found.slug, found.signal))
            if pid is not None:
                at = found.at
                hit = Hit(at.source, at.line, None, None, None, at.text)
                held.setdefault(pid, {}).setdefault(None, hit)
        return held

    def search(self, text: str, limit: int = 10) -> list[SearchMatch]:
        """Entries whose signals match pasted error text, best first (no threshold)."""
        scan = Scan(sources=["search"], source_ranks=[None])
        self.scanner.scan_source(scan, 0, [text if text.endswith("\n") else text + "\n"])
        scores: dict[int, list[int]] = {}
        for sig_index in scan.loose_hits:
            scores.setdefault(self.signals[sig_index].entry, []).append(sig_index)
        found = []
        for entry_index, sigs in scores.items():
            entry = self.entries[entry_index]
            # One line is one piece of evidence: an entry's signals that match the same line
            # (an OOM read as in an optimizer, an evaluation or a test() frame, frames that
            # search does not check) count once, at the strongest, not compounded.
            strongest: dict[int, float] = {}
            for s in sigs:
                for hit in scan.loose_hits[s]:
                    strongest[hit.line] = max(strongest.get(hit.line, 0.0), self.signals[s].weight)
            score = 1 - math.prod(1 - w for w in strongest.values())
            if not any(self.signals[s].kind == "error" for s in sigs):
                score *= 0.5
            pairs = sorted(
                {(h.line, report.short(h.text), s) for s in sigs for h in scan.loose_hits[s][:3]}
            )
            lines = sorted({(n, t) for n, t, _ in pairs})
            found.append(
                SearchMatch(
                    slug=entry.slug,
                    title=entry.title,
                    score=round(score, 3),
                    lines=[EvidenceLine(line=n, text=t) for n, t in lines[:5]],
                    matched=[
                        MatchedLine(
                            line=n,
                            text=t,
                            entry_field=f"fingerprint {self.signals[s].id}",
                            entry_text=self.signals[s].regex.pattern,
                        )
                        for n, t, s in pairs[:8]
                    ],
                )
            )
        found.sort(key=lambda f: (-f.score, f.slug))
        return found[:limit]


def _metric_signals(entries: list[Entry]) -> list[Signal]:
    """metrics.SIGNALS as signals of the entries they name (skipped when the catalogue has no
    such class: a fixture catalogue)."""
    index = {e.slug: i for i, e in enumerate(entries)}
    patterns = {
        "loss-divergence": metrics.LOSS_RE,
        "nan-loss": metrics.LOSS_RE,
        "host-oom-killed": metrics.HOST_MEMORY_RE,
        "eval-memory-growth": metrics.CENSUS_RE,
    }
    return [
        Signal(
            entry=index[slug],
            slug=slug,
            id=signal,
            weight=weight,
            kind="error",
            regex=patterns.get(slug, re.compile(re.escape(signal))),
            within_lines=None,
            in_frame=None,
            numeric=None,
        )
        for slug, signal, weight in metrics.SIGNALS
        if slug in index
    ]


@cache
def get_engine() -> Engine:
    """The engine over the catalogue shipped in the package, compiled once per process."""
    return Engine(load_entries())
