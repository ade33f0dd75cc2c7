"""Big logs: the lines the service's engine reads, picked out on this machine before uploading.

A failed run's log is mostly healthy progress lines; the diagnosis rests on the tracebacks, the
error lines and the lines around them. For a big log the client runs the engine's own reading
over it (the same masking, the same Hyperscan database of signals and markers, the same
look-backs through `rootcause.evidence.LineContext`) and keeps every line that reading touches:

- each line a signal or an engine marker flags, and every line the engine's walks back from it
  read (the traceback above an error, the lines a rank or time stamp is inherited from, the
  progress lines that show a run resumed after a caught error), plus a few lines around errors;
- the first line that shows each rank, and the last lines of each rank;
- the head and the tail of the log;
- the first line that teaches the service's masker each host or user name, so that the names it
  learns from the whole log it also learns from the extraction.

The lines left out are sent as empty lines: line numbers, and so the distances the engine
measures and the lines its evidence cites, stay those of the whole log, and a gzip of millions
of empty lines is a few kilobytes. Masking stays on the service: the lines are sent as they are
(only a private-key block cut by the extraction is sent as the masker would leave it, so that
no part of a key goes out without its BEGIN line). The local masking only decides.

Reading is single-pass and bounded: two chunks, the look-back window and what is kept.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from rootcause.engine import Engine
from rootcause.engine.scanning import INTERNAL, RECOVERY_PROGRESS_LINES, is_training_line
from rootcause.evidence import LOOKBACK_LINES, LineContext, LineInfo
from rootcause.masking import Masker, iter_line_chunks
from rootcause.masking.scanner import Candidate

# Logs up to this size (after gzip) are sent whole: extraction would save little.
EXTRACT_ABOVE = 4 << 20
# Sent whole too when the extraction keeps more than this share of the log.
WORTH_IT = 0.5
HEAD_LINES = 50
TAIL_LINES = 200
RANK_TAIL_LINES = 20
# Each rank's last lines are looked for in the end of a chunk this long (see _rank_tails).
RANK_SEARCH_CHARS = 64 << 10
# Context around an error or traceback line, for the reader of the evidence (the engine's own
# look-backs are followed exactly, whatever their length).
AROUND_ERRORS = 10
# Beyond this the extraction is not worth holding in memory: the log is sent whole.
MAX_KEPT_BYTES = 64 << 20

# A line that names its rank (the shapes of the engine's rank markers, and mpirun's).
_RANK_MENTION_RE = re.compile(
    r"\[(?:rank|default|Rank|RANK)(?: |: )?(\d{1,5})\]|\brank=(\d{1,5})\b|^(\d{1,5}): |"
    r"^\[\d{1,5},(\d{1,5})\]<std",
    re.M,
)
_TROUBLE = ("traceback", "exception")


class TooMuchKept(Exception):
    """The extraction would keep more than MAX_KEPT_BYTES: send the log whole instead."""


@dataclass
class Extract:
    """What is kept of a log: line index (0-based) -> the line as sent, without its newline."""

    lines: int = 0  # lines in the whole log
    size: int = 0  # bytes of the whole log (decompressed)
    kept: dict[int, str] = field(default_factory=dict)
    kept_bytes: int = 0

    @property
    def worth_it(self) -> bool:
        return self.kept_bytes + self.lines <= self.size * WORTH_IT

    def keep(self, index: int, text: str) -> None:
        if index not in self.kept:
            self.kept[index] = text
            self.kept_bytes += len(text) + 1
            if self.kept_bytes > MAX_KEPT_BYTES:
                raise TooMuchKept

    def text(self, prefix: Callable[[str], str] | None = None) -> Iterator[str]:
        """The log as sent: kept lines in place, the others empty; `prefix` rewrites kept lines."""
        previous = -1
        for index in sorted(self.kept):
            gap = index - previous - 1
            while gap > 0:  # a run of empty lines, in bounded pieces
                yield "\n" * min(gap, 1 << 20)
                gap -= 1 << 20
            line = self.kept[index]
            yield (prefix(line) if prefix else line) + "\n"
            previous = index
        if self.lines - previous - 1 > 0:
            yield "\n" * (self.lines - previous - 1)


class _Recorder(LineContext):
    """The engine's LineContext, remembering the lowest and highest lines its walks have read."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__(lines)
        self.low = len(lines)
        self.high = -1

    def parsed(self, i: int) -> LineInfo:
        self.low = min(self.low, i)
        self.high = max(self.high, i)
        return super().parsed(i)


class _TeachingMasker(Masker):
    """The service's masker, also telling where each host or user name it learns first appears.

    The service masks a bare mention of a learned name anywhere in the log; it can only do so for
    names it learns from the lines it is sent.
    """

    def __init__(self) -> None:
        # The Hyperscan recognizers alone, as on the light client: the lines they leave are
        # the service's (its Presidio analyzer masks the same way for the types they cover)
        super().__init__(analyzer=None)
        self.taught: list[int] = []  # byte offsets in the last chunk masked

    def _learn(self, buf: bytes, candidates: list[Candidate]) -> None:
        known = len(self._learned)
        super()._learn(buf, candidates)
        self.taught = []
        if len(self._learned) == known:
            return
        new = set(list(self._learned)[known:])
        for c in candidates:
            name = buf[c.start : c.end].lower()
            if c.entity == "HOSTNAME":
                name = name.split(b".", 1)[0]
            if name in new:
                new.discard(name)
                self.taught.append(c.start)


def _as_sent(raw: str, masked: str) -> str:
    """The raw line, except inside a private key, which is sent as the masker leaves it."""
    if masked != raw and (not masked.strip() or "<PRIVATE_KEY>" in masked):
        return masked
    return raw


def _resumption_walk(lines: Sequence[str], i: int) -> int:
    """The lowest line the engine's resumption check reads back from trouble line i."""
    found = 0
    low = i
    for j in range(i - 1, max(-1, i - 1 - LOOKBACK_LINES), -1):
        low = j
        if is_training_line(lines[j]):
            found += 1
            if found >= RECOVERY_PROGRESS_LINES:
                break
    return low


class _Extractor:
    def __init__(self, engine: Engine) -> None:
        self.scanner = engine.scanner
        self.masker = _TeachingMasker()
        self.out = Extract()
        self.base = 0  # global index of the current chunk's first line
        # the previous chunk's last lines, for look-backs: masked (as read) and as sent
        self.tail_masked: list[str] = []
        self.tail_raw: list[str] = []
        self.carry = -1  # keep lines up to this global index (context after an error)
        self.markers_seen: set[int] = set()
        self.rank_tails: dict[int, list[tuple[int, str]]] = {}
        self.last: list[tuple[int, str]] = []

    def chunk(self, chunk: str) -> None:
        masked = self.masker.mask(chunk)
        body = chunk[:-1] if chunk.endswith("\n") else chunk
        masked_body = masked[:-1] if masked.endswith("\n") else masked
        raw = body.split("\n")
        own = masked_body.split("\n")
        if len(own) != len(raw):
            raise AssertionError("masking changed the number of lines")
        hits, _ = self.scanner.matcher.scan(masked_body.encode("utf-8", "surrogatepass"))
        # window index k is global line first + k: the previous chunk's last lines, then these
        offset = len(self.tail_raw)
        first = self.base - offset
        lines = self.tail_masked + own
        sent = self.tail_raw + raw
        if "<PRIVATE_KEY>" in masked or "<PRIVATE_KEY>" in "".join(self.tail_masked):
            sent = [_as_sent(r, m) for r, m in zip(sent, lines, strict=True)]
        ctx = _Recorder(lines)

        def keep(low: int, high: int) -> None:
            for k in range(max(low, 0), min(high, len(sent) - 1) + 1):
                if first + k not in self.out.kept:
                    self.out.keep(first + k, sent[k])
            if high >= len(sent):
                self.carry = max(self.carry, first + high)

        if self.carry >= self.base:
            keep(offset, self.carry - first)
        if self.base < HEAD_LINES:
            keep(offset, HEAD_LINES - 1 - first)
        if self.masker.taught:
            buf = chunk.encode("utf-8", "surrogatepass")  # what the masker's offsets are in
            for start in self.masker.taught:
                k = offset + buf.count(b"\n", 0, start)
                keep(k, k)
        ranks: set[int] = set()
        for line_index, pid in hits:
            keep(*self._reach(ctx, lines, offset + line_index, pid))
            if pid >= self.scanner.marker_base:
                ranks.add(pid - self.scanner.marker_base)
        self._rank_tails(body, sent[offset:], ranks)
        n = len(raw)
        self.last = (self.last + [(first + k, sent[k]) for k in range(len(sent))[-TAIL_LINES:]])[
            -TAIL_LINES:
        ]
        self.out.lines += n
        self.base += n
        self.tail_masked = lines[-LOOKBACK_LINES:]
        self.tail_raw = sent[-LOOKBACK_LINES:]

    def _reach(self, ctx: _Recorder, lines: list[str], k: int, pid: int) -> tuple[int, int]:
        """The window lines to keep for a hit of pattern `pid` on line k: what the engine reads
        from it, and the context around errors."""
        scanner = self.scanner
        if pid >= scanner.marker_base:
            # a rank marker only adds its rank to the ranks seen: one line per rank is enough
            if pid in self.markers_seen:
                return k, k - 1
            self.markers_seen.add(pid)
            return k, k
        ctx.low = k
        ctx.high = k
        ctx.resolve(k)
        after = 0
        if pid >= scanner.internal_base:
            name = scanner.internal_names[pid - scanner.internal_base]
            if name in _TROUBLE:
                ctx.low = min(ctx.low, _resumption_walk(lines, k))
                after = AROUND_ERRORS
            elif name == "launcher_rank":
                for j in range(k - 1, max(-1, k - 5), -1):
                    ctx.parsed(j)
        else:
            signal = scanner.signals[pid]
            if signal.kind == "error" or signal.in_frame is not None:
                ctx.chained_after(k)  # the traceback walk that frames() and chains both take
            if signal.in_frame is not None:
                ctx.frames_after(k)  # a message printed before its traceback
            if signal.kind == "error":
                after = AROUND_ERRORS
        low = ctx.low - AROUND_ERRORS if after else ctx.low
        return low, max(k + after, ctx.high)

    def _rank_tails(self, body: str, raw: list[str], ranks: set[int]) -> None:
        """Each rank's last lines: of the lines that name it, the last ones of this chunk.

        Only the end of the chunk is searched, and the whole chunk only for the ranks (`ranks`,
        from the engine's rank markers) whose lines stopped before that end.
        """
        start = max(0, len(body) - RANK_SEARCH_CHARS)
        start = body.rfind("\n", 0, start) + 1 if start else 0
        mentions = self._mentions(_RANK_MENTION_RE, body, start)
        missing = ranks - set(mentions)
        if missing and start:
            numbers = "|".join(str(r) for r in sorted(missing))
            only = re.compile(
                rf"\[(?:rank|default|Rank|RANK)(?: |: )?({numbers})\]|\brank=({numbers})\b|"
                rf"^({numbers}): ",
                re.M,
            )
            mentions.update(self._mentions(only, body, 0))
        for rank, lines in mentions.items():
            fresh = [(self.base + n, raw[n]) for n in lines]
            self.rank_tails[rank] = (self.rank_tails.get(rank, []) + fresh)[-RANK_TAIL_LINES:]

    @staticmethod
    def _mentions(pattern: re.Pattern[str], body: str, start: int) -> dict[int, deque[int]]:
        """Rank -> the last RANK_TAIL_LINES line indexes (in `body`) that name it."""
        mentions: dict[int, deque[int]] = {}
        line, pos = body.count("\n", 0, start), start
        for m in pattern.finditer(body, start):
            line += body.count("\n", pos, m.start())
            pos = m.start()
            rank = int(next(g for g in m.groups() if g is not None))
            found = mentions.get(rank)
            if found is None:
                found = mentions[rank] = deque(maxlen=RANK_TAIL_LINES)
            if not found or found[-1] != line:
                found.append(line)
        return mentions

    def finish(self) -> Extract:
        for index, text in self.last:
            self.out.keep(index, text)
        for tail in self.rank_tails.values():
            for index, text in tail:
                self.out.keep(index, text)
        return self.out


def extract(
    pieces: Iterable[bytes], engine: Engine, progress: Callable[[int], None] | None = None
) -> Extract:
    """The lines of a log the service's engine needs, as described above.

    `progress` is called with the bytes read so far. Raises TooMuchKept when the kept lines
    alone pass MAX_KEPT_BYTES.
    """
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for piece in pieces:
            size += len(piece)
            if progress:
                progress(size)
            yield piece

    extractor = _Extractor(engine)
    for chunk in iter_line_chunks(counted()):
        extractor.chunk(chunk)
    out = extractor.finish()
    out.size = size
    return out


def js_regex(pattern: str) -> dict[str, str]:
    """A catalogue pattern (Python `re` syntax that Hyperscan also takes) as the source and flags
    of a JavaScript RegExp: a leading `(?i)` becomes the i flag, `(?P<name>` becomes `(?<name>`.
    The rest of the syntax the contract allows is the same in both."""
    flags = ""
    if pattern.startswith("(?i)"):
        pattern, flags = pattern[4:], "i"
    return {"source": pattern.replace("(?P<", "(?<"), "flags": flags}


def browser_patterns(engine: Engine) -> dict[str, object]:
    """What the web page's port of this extraction (diagnosis/static/diagnosis/extract.js) scans
    for: the engine's signals, in its order, and its own markers."""
    return {
        "version": engine.version,
        "signals": [
            {**js_regex(s.regex.pattern), "kind": s.kind, "in_frame": s.in_frame is not None}
            for s in engine.signals
        ],
        "internal": [{"name": name, **js_regex(p)} for name, p in INTERNAL.items()],
    }
