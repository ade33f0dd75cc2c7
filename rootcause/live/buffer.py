"""The job's output in bounded memory, and whether it is still making progress.

Fed in the blocks the pipes or files give, never line by line: at 50,000 lines a second a Python
call per line would cost the job more than the 5 % of its CPU time we allow ourselves. Per block:
one search for the last newline, one Hyperscan scan of the complete lines for anything error-ish,
one look at the last `\\r`-redrawn segment for a step counter. The figures a training loop logs on
every line (a loss, a grad norm) are read apart, in a sample (`Trigger.figures`).
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from dataclasses import dataclass, field

import hyperscan

from rootcause.engine import Engine
from rootcause.engine.scanning import INTERNAL
from rootcause.evidence import parse_line
from rootcause.hscache import compiled
from rootcause.matching import hyperscan_form

# The first lines of a source (the launcher's configuration, the world size) are kept for good;
# after them, the last TAIL_BYTES. Diagnosing re-reads the whole buffer, so its size bounds the
# cost of one diagnosis (about 0.3 s for 4 MiB on this machine) whatever the job's length.
HEAD_BYTES = 64 << 10
TAIL_BYTES = 4 << 20
# A "line" that never ends (a bar redrawn with `\r` for hours) is cut here.
MAX_PARTIAL = 64 << 10
LAST_LINES_PER_RANK = 20
# What a stall report reads back to find each rank's last lines.
STALL_LOOKBACK_LINES = 5000

# Moving parts of a redrawn bar that change while the step does not: elapsed and remaining
# times, rates, sizes per second. What digits remain (tqdm's "45/100", "step 3000") are the
# counter; a bar redrawn with the same counter is no progress.
_CLOCKS_RE = re.compile(
    rb"\d+(?:\.\d+)?\s*(?:[kMGT]?i?B/s|it/s|s/it|ex/s|samples/s|tok(?:ens)?/s)|"
    rb"\d+:\d\d(?::\d\d)?|\d+(?:\.\d+)?\s*(?:ms|s)\b"
)
_NUMBER_RE = re.compile(rb"\d+")


def counter_key(segment: bytes) -> tuple[bytes, ...] | bytes:
    """What must change in a redrawn segment for it to count as progress."""
    rest = _CLOCKS_RE.sub(b"", segment)
    numbers = tuple(_NUMBER_RE.findall(rest))
    return numbers if numbers else rest.strip()


# The catalogue's signals marked `figure: true` read a figure a training loop logs on every step
# (a loss, a grad norm), not an error line. On a log with a loss and a grad norm on every line they
# cost the trigger's scan most of its time (0.64 ms of CPU a 370 KB block with them, 0.09 without:
# Hyperscan starts matching at every `grad_norm`), and what they show lasts (a diverged loss stays
# high, a NaN stays NaN), so they are read in a sample: the newest FIGURE_SAMPLE bytes of complete
# lines, at most every FIGURE_EVERY seconds. A job printing less than that in that time has every
# line read; a chattier one has its newest lines read. A figure printed once and never again is
# seen when the job ends (its whole buffer is diagnosed if it failed), not while it runs.
FIGURE_EVERY = 1.0
FIGURE_SAMPLE = 64 << 10
# After figures triggered a diagnosis, the next look at them waits this long: the same figures a
# second later would give the same diagnosis, and each one costs a few hundred ms.
FIGURE_AFTER_HIT = 30.0


def trigger_database(engine: Engine, *, figures: bool = False) -> hyperscan.Database:
    """Any catalogue error signal, or an exception line or traceback header: a line that may
    change the diagnosis (`figures`: the catalogue's `figure` signals alone). Each pattern
    reports once per scan (all we need is whether)."""
    patterns = [
        s.regex.pattern for s in engine.signals if s.kind == "error" and s.figure == figures
    ]
    if not figures:
        patterns += [INTERNAL["exception"], INTERNAL["traceback"]]
    forms = [hyperscan_form(p) for p in patterns]
    return compiled([f for f, _ in forms], [fl | hyperscan.HS_FLAG_SINGLEMATCH for _, fl in forms])


class _Any:
    """Whether a database matches anywhere in some bytes (one Hyperscan scan, stopped at the
    first match)."""

    def __init__(self, database: hyperscan.Database) -> None:
        self.database = database
        self.scratch = hyperscan.Scratch(database)

    def __call__(self, data: bytes) -> bool:
        found = False

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> bool:
            nonlocal found
            found = True
            return True  # stop the scan: one is enough

        # a scan stopped by on_match raises in some hyperscan versions
        with contextlib.suppress(hyperscan.error):
            self.database.scan(data, match_event_handler=on_match, scratch=self.scratch)
        return found


class Trigger:
    """Whether a block of complete lines holds anything error-ish (called with the block), and
    whether a sample of the newest lines shows a failing figure (`figures`)."""

    def __init__(self, engine: Engine) -> None:
        self.lines = _Any(trigger_database(engine))
        self.figures = _Any(trigger_database(engine, figures=True))

    def __call__(self, data: bytes) -> bool:
        return self.lines(data)


@dataclass
class Source:
    """One stream of lines: the job's output (`run`) or one followed file (`watch`)."""

    name: str
    head: bytearray = field(default_factory=bytearray)
    tail: deque[bytes] = field(default_factory=deque)
    tail_bytes: int = 0
    dropped: int = 0  # bytes of the middle no longer kept
    # per channel (stdout, stderr): the unfinished last line, and the last redraw's counter
    partial: dict[str, bytes] = field(default_factory=dict)
    redraw: dict[str, tuple[bytes, ...] | bytes] = field(default_factory=dict)
    total_bytes: int = 0
    # the newest complete lines not yet read for figures (references to the tail's blocks, no
    # copy; at least FIGURE_SAMPLE bytes of them when there are that many), and when to read them
    fresh: deque[bytes] = field(default_factory=deque)
    fresh_bytes: int = 0
    figures_at: float = 0.0

    def add_lines(self, data: bytes) -> None:
        """Complete lines, kept in the head until it is full, then in the bounded tail."""
        self.total_bytes += len(data)
        self.fresh.append(data)
        self.fresh_bytes += len(data)
        while self.fresh_bytes - len(self.fresh[0]) >= FIGURE_SAMPLE:
            self.fresh_bytes -= len(self.fresh.popleft())
        room = HEAD_BYTES - len(self.head)
        if room > 0 and not self.tail:
            if len(data) <= room:
                self.head += data
                return
            cut = data.rfind(b"\n", 0, room) + 1
            self.head += data[:cut]
            data = data[cut:]
            if not data:
                return
        self.tail.append(data)
        self.tail_bytes += len(data)
        while self.tail_bytes > TAIL_BYTES and len(self.tail) > 1:
            old = self.tail.popleft()
            self.tail_bytes -= len(old)
            self.dropped += len(old)

    def figures_due(self, trigger: Trigger, *, now: float, ended: bool = False) -> bool:
        """Reads the fresh lines' newest FIGURE_SAMPLE bytes for a failing figure, when there
        are fresh lines and FIGURE_EVERY has passed since the last read (or the job `ended`)."""
        if not self.fresh or (now < self.figures_at and not ended):
            return False
        data = b"".join(self.fresh)
        if len(data) > FIGURE_SAMPLE:
            data = data[data.find(b"\n", len(data) - FIGURE_SAMPLE - 1) + 1 :]
        self.fresh.clear()
        self.fresh_bytes = 0
        hit = trigger.figures(data)
        self.figures_at = now + (FIGURE_AFTER_HIT if hit else FIGURE_EVERY)
        return hit

    def text(self) -> str:
        """What the engine reads: the head, a note of what was dropped, the tail, and the
        unfinished lines (a traceback's last line may not have its newline yet)."""
        parts = [bytes(self.head)]
        if self.dropped:
            parts.append(f"[rootcause: {self.dropped:,} bytes of output not kept here]\n".encode())
        parts.extend(self.tail)
        parts.extend(p + b"\n" for p in self.partial.values() if p.strip(b"\r"))
        return b"".join(parts).decode("utf-8", "replace").replace("\r", "\n")

    def last_lines(self, default_rank: int | None) -> dict[int | None, list[str]]:
        """Each rank's last lines (None: lines that name no rank), read from the tail."""
        recent: deque[str] = deque(maxlen=STALL_LOOKBACK_LINES)
        for block in [bytes(self.head), *self.tail]:
            recent.extend(block.decode("utf-8", "replace").splitlines())
        recent.extend(p.decode("utf-8", "replace") for p in self.partial.values() if p.strip())
        out: dict[int | None, deque[str]] = {}
        for line in recent:
            text = line.rsplit("\r", 1)[-1] if "\r" in line else line
            if not text.strip():
                continue
            rank = parse_line(text).rank
            rank = default_rank if rank is None else rank
            out.setdefault(rank, deque(maxlen=LAST_LINES_PER_RANK)).append(text)
        return {rank: list(lines) for rank, lines in out.items()}


@dataclass
class Fed:
    """What one block changed: new complete lines, error-ish ones among them, progress."""

    lines: bool
    triggered: bool
    progress: bool


def feed(source: Source, channel: str, data: bytes, trigger: Trigger) -> Fed:
    """Add one block of a channel's output to its source."""
    partial = source.partial.get(channel, b"")
    cut = data.rfind(b"\n") + 1
    # one copy of the block at most: the complete lines (with the line begun before), the rest
    complete = (partial + data[:cut] if partial else data[:cut]) if cut else b""
    rest = data[cut:] if cut else partial + data
    if len(rest) > MAX_PARTIAL:  # a bar redrawn forever without a newline
        rest = rest[rest.rfind(b"\r", 0, len(rest) - 1) + 1 :]
        if len(rest) > MAX_PARTIAL:
            complete, rest = complete + rest + b"\n", b""
    source.partial[channel] = rest
    triggered = False
    if complete:
        source.add_lines(complete)
        triggered = trigger(complete)
    progress = bool(complete)
    if not progress:
        # only a redraw (or the start of a line): progress when its counter moved
        segments = [s for s in rest.split(b"\r") if s.strip()]
        if segments:
            key = counter_key(segments[-1])
            if source.redraw.get(channel) != key:
                source.redraw[channel] = key
                progress = True
    else:
        source.redraw.pop(channel, None)
    return Fed(lines=bool(complete), triggered=triggered, progress=progress)
