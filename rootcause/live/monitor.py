"""When to diagnose a running job, what decides a failure, and when the job stalled.

Readers (the pipes' threads, the file followers) call `Monitor.feed`; one loop calls `due` and
`stalled` and runs the diagnoses, so a diagnosis never holds up the output passing through. A
diagnosis runs only after an error-ish line (buffer.Trigger) or a failing figure in a sample of
the newest lines (read by `due`), once the output has been quiet for DEBOUNCE seconds (a
traceback arrives in several writes; its last line is what decides) or at most MAX_DELAY after
the first trigger, and reads the bounded buffer: its cost does not grow with the job's length,
and a job that prints nothing error-ish is never diagnosed until it ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from rootcause.cli.results import FileResult
from rootcause.engine import Engine
from rootcause.live.buffer import Source, Trigger, feed
from rootcause.masking import Masker
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.remediation import complete_result

DEBOUNCE = 0.3
MAX_DELAY = 1.5


@dataclass(frozen=True)
class Diagnosis:
    """One diagnosis of the buffer, masked, and the text it was made from (for posting)."""

    result: FileResult
    decides: bool  # a root-cause failure, not only collateral timeouts or nothing
    texts: list[tuple[str, str]]  # (source name, masked text)


class Monitor:
    """The sources of one job, fed by readers, diagnosed by one loop."""

    def __init__(self, *, engine: Engine, name: str, stall_after: float) -> None:
        self.engine = engine
        self.name = name
        self.stall_after = stall_after
        self.trigger = Trigger(engine)
        self.sources: dict[str, Source] = {}
        self.default_ranks: dict[str, int | None] = {}
        self._lock = threading.Lock()
        now = time.monotonic()
        self.last_progress = now
        self.last_output = now
        self._first_trigger: float | None = None
        self._last_trigger = 0.0
        self._stall_reported = False
        self._any_output = False

    def add_source(self, name: str, default_rank: int | None = None) -> None:
        with self._lock:
            self.sources.setdefault(name, Source(name))
            self.default_ranks[name] = default_rank

    def feed(self, source: str, channel: str, data: bytes) -> None:
        """A block a reader got (any size; lines may be split across blocks)."""
        now = time.monotonic()
        with self._lock:
            src = self.sources.get(source)
            if src is None:
                src = self.sources[source] = Source(source)
            fed = feed(src, channel, data, self.trigger)
            self.last_output = now
            self._any_output = True
            if fed.progress:
                self.last_progress = now
                self._stall_reported = False
            if fed.triggered:
                if self._first_trigger is None:
                    self._first_trigger = now
                self._last_trigger = now

    def due(self, *, ended: bool = False) -> bool:
        """An error-ish line came and the output has settled (or waited long enough, or the
        job `ended`: nothing more will come)."""
        now = time.monotonic()
        with self._lock:
            # the figures of the newest lines, read here (at most every FIGURE_EVERY seconds),
            # not by the readers: see buffer.FIGURE_EVERY
            for src in self.sources.values():
                if src.figures_due(self.trigger, now=now, ended=ended):
                    if self._first_trigger is None:
                        self._first_trigger = now
                    self._last_trigger = now
            first = self._first_trigger
            return first is not None and (
                ended or now - self._last_trigger >= DEBOUNCE or now - first >= MAX_DELAY
            )

    def stalled(self) -> bool:
        """No progress for stall_after seconds; true once per stall.

        The clock starts at the job's first output: before it, imports, compilation or a
        dataset download are not told apart from a hang, and a job that never prints is not
        a job we can say anything about from its output."""
        with self._lock:
            if self._stall_reported or self.stall_after <= 0 or not self._any_output:
                return False
            if time.monotonic() - self.last_progress < self.stall_after:
                return False
            self._stall_reported = True
            return True

    def idle_for(self) -> float:
        with self._lock:
            return time.monotonic() - self.last_output

    def _snapshot(self) -> list[tuple[str, str]]:
        with self._lock:
            self._first_trigger = None
            return [(name, src.text()) for name, src in self.sources.items()]

    def diagnose(self) -> Diagnosis:
        """Mask the buffer (the client's masker, as `diagnose` masks a file) and run the engine.
        Clears the pending trigger: the next diagnosis waits for a new error-ish line."""
        raw = self._snapshot()
        masker = Masker(analyzer=WHEN_NEEDED)
        for _, text in raw:
            for chunk in _chunks(text):
                masker.learn(chunk)
        texts = [(name, "".join(masker.mask(c) for c in _chunks(text))) for name, text in raw]
        if len(texts) == 1:
            result = self.engine.diagnose([texts[0][1]])
        else:
            result = self.engine.diagnose_sources([(self._engine_name(n), [t]) for n, t in texts])
        entry = self.engine.by_slug[result.failure.slug] if result.failure else None
        completed = complete_result(result, entry=entry, include_fix=True, masking=masker.counts)
        file_result = FileResult(**vars(completed), file=self.name)
        return Diagnosis(file_result, decides=self.decides(file_result), texts=texts)

    def _engine_name(self, name: str) -> str:
        """The name the engine takes a file's rank from (its last number): a followed file's
        rank, when its directory or name gave one (`attempt_0/3/stdout.log` is rank 3)."""
        rank = self.default_ranks.get(name)
        base = name.rsplit("/", 1)[-1]
        return base if rank is None else f"{base} (rank{rank})"

    def decides(self, result: FileResult) -> bool:
        """A failure that needs no more output: its class is not a collateral one (a timeout
        on ranks left waiting), so the rank that caused it has spoken."""
        if result.failure is None:
            return False
        entry = self.engine.by_slug.get(result.failure.slug)
        return entry is not None and not entry.fingerprints.is_collateral

    def last_lines(self) -> dict[int | None, list[str]]:
        """Each rank's last lines over every source, raw (mask before showing them)."""
        with self._lock:
            merged: dict[int | None, list[str]] = {}
            for name, src in self.sources.items():
                for rank, lines in src.last_lines(self.default_ranks.get(name)).items():
                    merged.setdefault(rank, []).extend(lines)
            return merged


def _chunks(text: str, size: int = 1 << 20) -> Iterator[str]:
    """Line-aligned chunks for the masker (a token split across two calls is not recognised)."""
    start = 0
    while start < len(text):
        end = text.find("\n", min(start + size, len(text)) - 1)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end
