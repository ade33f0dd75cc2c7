"""The fingerprint matcher: every catalogue pattern compiled into one Hyperscan database.

Hyperscan scans a whole chunk in one call, in time linear in the chunk whatever the number of
patterns, and never backtracks. Python `re` only confirms a hit on the single matched line, cut to
a bounded window, so hostile input cannot make either side slow. The engine adds its own internal
patterns (traceback heads, watchdog lines, launcher summaries) to the same database.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import hyperscan
from msgspec import UnsetType

from rootcause.catalogue.entry import Entry, SignalKind
from rootcause.hscache import compiled

# Confirmation looks at most this many characters before the match end (and a little after).
CONFIRM_WINDOW = 4096
# Matches kept per pattern per chunk: a line repeated a million times must not cost a million
# Python calls; the first hits are the ones evidence needs.
MAX_HITS_PER_PATTERN = 200

_NAMED_GROUP_RE = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
_NUMERIC_RE = re.compile(
    r"^(?P<a>[a-z_]+) *(?:- *(?P<minus>[a-z_]+) *)?(?P<op>>=|<=|>|<) *(?:(?P<k>[0-9.]+) *\*? *)?"
    r"(?P<b>[a-z_]*)$"
)
_SIZE_RE = re.compile(r"(?i)^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]i?B|bytes?|B)?")
_UNITS = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kb": 1000,
    "kib": 1024,
    "mb": 1000**2,
    "mib": 1024**2,
    "gb": 1000**3,
    "gib": 1024**3,
    "tb": 1000**4,
    "tib": 1024**4,
}


class PatternError(ValueError):
    """A fingerprint pattern that one of the two regex engines refuses."""


@dataclass(frozen=True)
class Numeric:
    left: str
    op: str
    factor: float
    right: str | None
    constant: float | None
    # `reserved - allocated > requested`: the left side is a difference of two groups
    minus: str | None = None

    def holds(self, groups: dict[str, str | None]) -> bool:
        a = to_number(groups.get(self.left))
        if a is None:
            return False
        if self.minus:
            subtracted = to_number(groups.get(self.minus))
            if subtracted is None:
                return False
            a -= subtracted
        if self.right:
            b = to_number(groups.get(self.right))
            if b is None:
                return False
            b *= self.factor
        elif self.constant is not None:
            b = self.constant
        else:
            return False
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[self.op]


def to_number(text: str | None) -> float | None:
    """'20.00 MiB' -> 20971520.0; a bare number stays as it is."""
    if not text:
        return None
    m = _SIZE_RE.match(text)
    if not m:
        return None
    value = float(m.group(1))
    unit = (m.group(2) or "").lower()
    return value * _UNITS.get(unit, 1)


def parse_numeric(expr: str) -> Numeric:
    m = _NUMERIC_RE.match(expr.strip())
    if not m:
        raise PatternError(
            f"numeric comparison {expr!r} is not 'a > b', 'a > 2 * b', 'a - b > c' or 'a > 5'"
        )
    b = m.group("b") or None
    k = m.group("k")
    if b is None and k is None:
        raise PatternError(f"numeric comparison {expr!r} has no right-hand side")
    return Numeric(
        left=m.group("a"),
        op=m.group("op"),
        factor=float(k) if (k and b) else 1.0,
        right=b,
        constant=float(k) if (k and not b) else None,
        minus=m.group("minus"),
    )


def hyperscan_form(pattern: str) -> tuple[bytes, int]:
    """The pattern as Hyperscan takes it: named groups made plain, `(?i)` turned into a flag."""
    flags = hyperscan.HS_FLAG_MULTILINE
    if pattern.startswith("(?i)"):
        pattern = pattern[4:]
        flags |= hyperscan.HS_FLAG_CASELESS
    return _NAMED_GROUP_RE.sub("(", pattern).encode("utf-8"), flags


def compile_python(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise PatternError(f"{pattern!r}: Python re refuses it: {exc}") from exc


def check_pattern(pattern: str) -> None:
    """Raise PatternError unless both engines compile the pattern (the contract's rule)."""
    compile_python(pattern)
    expr, flags = hyperscan_form(pattern)
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[expr], ids=[0], elements=1, flags=[flags])
    except hyperscan.error as exc:
        raise PatternError(f"{pattern!r}: Hyperscan refuses it: {exc}") from exc


@dataclass(frozen=True)
class Signal:
    entry: int  # index into the engine's entry list
    slug: str
    id: str
    weight: float
    kind: SignalKind
    regex: re.Pattern[str]
    within_lines: int | None
    in_frame: re.Pattern[str] | None
    numeric: Numeric | None
    cut_traceback: bool = False
    figure: bool = False
    decided_by: str | None = None


def signals_of(entries: list[Entry]) -> list[Signal]:
    out = []
    for index, entry in enumerate(entries):
        for spec in entry.fingerprints.signals:
            where = f"{entry.slug}/{spec.id}"
            try:
                compile_python(spec.pattern)
                in_frame = (
                    None if isinstance(spec.in_frame, UnsetType) else compile_python(spec.in_frame)
                )
                numeric = (
                    None if isinstance(spec.numeric, UnsetType) else parse_numeric(spec.numeric)
                )
            except PatternError as exc:
                raise PatternError(f"{where}: {exc}") from exc
            out.append(
                Signal(
                    entry=index,
                    slug=entry.slug,
                    id=spec.id,
                    weight=spec.weight,
                    kind=spec.signal_kind,
                    regex=compile_python(spec.pattern),
                    within_lines=None
                    if isinstance(spec.within_lines, UnsetType)
                    else spec.within_lines,
                    in_frame=in_frame,
                    numeric=numeric,
                    cut_traceback=spec.cut_traceback is True,
                    figure=spec.figure is True,
                    decided_by=None if isinstance(spec.decided_by, UnsetType) else spec.decided_by,
                )
            )
    _check_all(
        [(f"{e.slug}/{sig.id}", sig.pattern) for e in entries for sig in e.fingerprints.signals]
    )
    return out


def _check_all(patterns: list[tuple[str, str]]) -> None:
    """check_pattern for every pattern in one (cached) compile; one by one only to name the
    pattern Hyperscan refuses, with where it comes from."""
    forms = [hyperscan_form(p) for _, p in patterns]
    try:
        compiled([f for f, _ in forms], [flags for _, flags in forms])
    except hyperscan.error as error:
        for where, pattern in patterns:
            try:
                check_pattern(pattern)
            except PatternError as exc:
                raise PatternError(f"{where}: {exc}") from exc
        raise PatternError(str(error)) from error


class Matcher:
    """One Hyperscan database over signal patterns (ids 0..n-1) and internal patterns after them."""

    def __init__(self, patterns: list[str], single: set[int] | None = None) -> None:
        self.patterns = patterns
        forms = [hyperscan_form(p) for p in patterns]
        # `single` patterns report once per scan: markers whose presence is all that matters
        forms = [
            (f, flags | hyperscan.HS_FLAG_SINGLEMATCH if single and i in single else flags)
            for i, (f, flags) in enumerate(forms)
        ]
        try:
            self.database = compiled([f[0] for f in forms], [f[1] for f in forms])
        except hyperscan.error as exc:
            # find the culprit for a useful message
            for p in patterns:
                check_pattern(p)
            raise PatternError(str(exc)) from exc
        # a Hyperscan scratch space serves one scan at a time: one per thread (web search runs
        # in threads; Celery's prefork workers are single-threaded anyway)
        self._local = threading.local()

    def scan(self, data: bytes) -> tuple[list[tuple[int, int]], dict[int, int]]:
        """(line index, pattern id) for each matching line in line order, and the byte offset
        where each of those lines starts."""
        ends: list[tuple[int, int]] = []
        counts = [0] * len(self.patterns)

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> bool:
            if counts[pid] < MAX_HITS_PER_PATTERN:
                counts[pid] += 1
                ends.append((end, pid))
            return False

        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.database)
        self.database.scan(data, match_event_handler=on_match, scratch=scratch)
        ends.sort()
        out: list[tuple[int, int]] = []
        starts: dict[int, int] = {0: 0}
        seen: set[tuple[int, int]] = set()
        line = 0
        pos = 0
        for end, pid in ends:
            at = max(end - 1, 0)
            if at > pos:
                # newlines are counted once over the whole buffer: linear whatever the hits
                newlines = data.count(b"\n", pos, at)
                if newlines:
                    line += newlines
                    starts[line] = data.rfind(b"\n", pos, at) + 1
                pos = at
            key = (line, pid)
            if key not in seen:
                seen.add(key)
                out.append(key)
        return out, starts
