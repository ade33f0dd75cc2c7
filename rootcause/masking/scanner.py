"""One Hyperscan database for every masking pattern, and the candidate spans it yields.

Works on UTF-8 bytes: Hyperscan reports byte offsets, and replacing in bytes avoids mapping
offsets back to characters (only the Presidio adapter needs character offsets).
"""

from __future__ import annotations

import re
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache, partial
from itertools import compress, islice
from operator import attrgetter, itemgetter, le
from typing import NamedTuple, TypeVar

import hyperscan

from rootcause.hscache import compiled
from rootcause.masking.patterns import (
    PRIVATE_KEY_BEGIN,
    PRIVATE_KEY_END,
    SPECS,
    Spec,
)
from rootcause.masking.spec import Plan
from rootcause.masking.starts import StartOf
from rootcause.masking.validators import forget_verdicts

_T = TypeVar("_T")

# A confirmation never looks further than this past the anchor: bounded work per candidate.
_CONFIRM_WINDOW = 4096
_LEARNED_PRIORITY = 20


class Candidate(NamedTuple):
    """A value found: [start, end) in the buffer, its type, and the priority that decides
    between two candidates of the same span (lower wins). A tuple: a dense log makes hundreds
    of thousands (a frozen dataclass's __init__ cost three times as much)."""

    start: int
    end: int
    entity: str
    priority: int


class Database:
    """A compiled block-mode database; scans are serialised because one scratch is shared."""

    def __init__(
        self,
        expressions: list[bytes],
        flags: list[int],
        *,
        cache: bool = False,
        starts: dict[int, StartOf] | None = None,
    ) -> None:
        """``starts``: the ids of patterns compiled without a start of match, each with the
        function that gives the start Hyperscan's leftmost start of match would (``Spec.start``):
        every scan reports it in their hits."""
        # Only fixed patterns are cached (hscache): a database of names learned from a log, or
        # of an organisation's terms, would put them on disk.
        if cache:
            self._db = compiled(expressions, flags)
        else:
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(
                expressions=expressions,
                ids=list(range(len(expressions))),
                elements=len(expressions),
                flags=flags,
            )
        self._lock = threading.Lock()
        self._starts = starts or {}

    def _started(self, buf: bytes, on_match: Callable[..., _T]) -> Callable[..., _T]:
        """``on_match`` with the start of the hits of ``_starts``' patterns filled in."""
        starts = self._starts
        if not starts:
            return on_match

        def on_hit(pid: int, start: int, end: int, flags: int, context: object) -> _T:
            start_of = starts.get(pid)
            if start_of is not None:
                start = start_of(buf, end)
            return on_match(pid, start, end, flags, context)

        return on_hit

    def scan_until(self, buf: bytes, on_match: Callable[..., bool]) -> bool:
        """Scan with a callback that returns True to stop; False if it stopped the scan."""
        return self.scan_raw_until(buf, self._started(buf, on_match))

    @property
    def starts(self) -> dict[int, StartOf]:
        """The patterns whose hits' starts ``scan_until`` and ``scan`` fill in (``_starts``)."""
        return self._starts

    def scan_raw_until(self, buf: bytes, on_match: Callable[..., bool]) -> bool:
        """``scan_until`` without the starts of ``starts``' patterns filled in (what Hyperscan
        reports for them is not their start): one callback a hit rather than two, for a caller
        that fills them in itself (``filled``)."""
        with self._lock:
            try:
                self._db.scan(buf, match_event_handler=on_match)
            except hyperscan.ScanTerminated:
                return False
        return True

    def filled(self, buf: bytes, hits: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """``hits`` of ``scan_raw_until`` with the starts ``scan_until`` would have reported."""
        starts = self._starts
        if not starts:
            return hits
        return [h if h[0] not in starts else (h[0], starts[h[0]](buf, h[2]), h[2]) for h in hits]

    def matches(self, buf: bytes) -> bool:
        """Whether any pattern matches: the scan stops at the first match."""

        def on_match(pid: int, start: int, end: int, flags: int, context: object) -> bool:
            return True

        return not self.scan_raw_until(buf, on_match)

    def scan(self, buf: bytes) -> list[tuple[int, int, int]]:
        hits: list[tuple[int, int, int]] = []
        append = hits.append

        def on_match(pid: int, start: int, end: int, flags: int, context: object) -> None:
            append((pid, start, end))

        with self._lock:
            self._db.scan(buf, match_event_handler=on_match)
        return self.filled(buf, hits)


def spec_flags(spec: Spec) -> int:
    flags = hyperscan.HS_FLAG_SOM_LEFTMOST if spec.som and spec.start is None else 0
    if spec.caseless:
        flags |= hyperscan.HS_FLAG_CASELESS
    if spec.multiline:
        flags |= hyperscan.HS_FLAG_MULTILINE
    return flags


def spec_starts(specs: tuple[Spec, ...]) -> dict[int, StartOf]:
    """The ids of ``specs`` whose start is found from the end (``Spec.start``)."""
    return {i: s.start for i, s in enumerate(specs) if s.start is not None}


def spec_database(specs: tuple[Spec, ...]) -> Database:
    """The patterns of ``specs``, ids as in it (compiled once: hscache)."""
    return Database(
        [s.hs for s in specs], [spec_flags(s) for s in specs], cache=True, starts=spec_starts(specs)
    )


# The patterns a name can be learned from (a home path, an NCCL prefix, host=, user@host):
# the learning pass over a whole log scans with these alone.
LEARNED_ENTITIES = ("HOSTNAME", "USERNAME", "CLOUD_ACCOUNT")
LEARNING_SPECS: tuple[Spec, ...] = tuple(s for s in SPECS if s.entity in LEARNED_ENTITIES)
# Their ids in SPECS -> their ids in LEARNING_SPECS.
LEARNING_IDS: dict[int, int] = {
    spec: i for i, spec in enumerate(j for j, s in enumerate(SPECS) if s.entity in LEARNED_ENTITIES)
}
# Their ids in LEARNING_SPECS -> their ids in SPECS.
_MAIN_IDS: tuple[int, ...] = tuple(sorted(LEARNING_IDS, key=LEARNING_IDS.__getitem__))


# Built in C, with no Python frame a candidate (a dense log has hundreds of thousands):
# a Candidate from its four fields as one tuple, and the fields of many at once.
_candidate = partial(tuple.__new__, Candidate)
_FIRST, _PID_START, _HIT_END = itemgetter(0), itemgetter(0, 1), itemgetter(2)
_START, _END, _ENTITY, _PRIORITY = (
    attrgetter("start"),
    attrgetter("end"),
    attrgetter("entity"),
    attrgetter("priority"),
)


class Confirmed:
    """The learning pass's verdicts on one buffer, kept for its masking pass: the learning
    patterns are in the main database too, and their anchors in equal bytes stand for the same
    candidates, so the masking pass need not confirm them again. Compact (about 40 bytes an
    anchor): a log's every chunk has one until its masking pass."""

    __slots__ = (
        "_digest",
        "_ends",
        "_entities",
        "_keys",
        "_priorities",
        "_size",
        "_starts",
        "scanned",
    )

    def __init__(
        self,
        buf: bytes,
        verdicts: list[tuple[int, Candidate | None]],
        hits: list[tuple[int, int, int]] | None = None,
    ) -> None:
        # (anchors, hits) of the learning database's complete scan of buf when it was given:
        # what the learning patterns add to the main database's guard count (density.py)
        self.scanned: tuple[int, int] | None = None
        if hits is not None:
            self.scanned = (len(set(map(_PID_START, hits))), len(hits))
        self._size = len(buf)
        self._digest = hash(buf)
        # in the order they were judged: table() is a dict, and the order of candidates()
        # decides nothing (find_with_verdicts: no two of one span and priority differ)
        self._keys = array("q", map(_FIRST, verdicts))
        # One list, then one array per field (appending to four arrays per anchor cost a tenth
        # of the learning pass on the dense cluster log); the fields read in C.
        none = Candidate(-1, -1, "", -1)
        kept = [found or none for _, found in verdicts]
        self._starts = array("q", map(_START, kept))
        self._ends = array("q", map(_END, kept))
        # the validators' constants: a reference each
        self._entities: list[str] = list(map(_ENTITY, kept))
        self._priorities = array("h", map(_PRIORITY, kept))

    def of(self, buf: bytes) -> bool:
        """Whether these verdicts were made on bytes equal to ``buf``."""
        return len(buf) == self._size and hash(buf) == self._digest

    def table(self) -> dict[int, Candidate | None]:
        """Every verdict, by ``pid << 40 | key`` (``pid`` in SPECS, its key as in
        find_candidates): the masking pass of a chunk looks up thousands. Built when the chunk
        is masked and dropped after (the arrays are what is kept)."""
        fields = zip(self._starts, self._ends, self._entities, self._priorities, strict=True)
        verdicts = [None if f[0] < 0 else _candidate(f) for f in fields]
        return dict(zip(self._keys, verdicts, strict=True))

    def candidates(self) -> list[Candidate]:
        """The candidates the learning patterns' anchors stood for."""
        fields = zip(self._starts, self._ends, self._entities, self._priorities, strict=True)
        return list(map(_candidate, compress(fields, map((0).__le__, self._starts))))


_CONFIRMED: ContextVar[Confirmed | None] = ContextVar("rootcause_masking_confirmed", default=None)


@contextmanager
def confirmed(known: Confirmed | None) -> Iterator[None]:
    """While inside: ``find_candidates`` with SPECS on bytes equal to those ``known`` was made
    on takes the learning patterns' verdicts from it."""
    if known is None:
        yield
        return
    token = _CONFIRMED.set(known)
    try:
        yield
    finally:
        _CONFIRMED.reset(token)


def find_learning_candidates(
    buf: bytes, hits: list[tuple[int, int, int]] | None = None
) -> tuple[list[Candidate], Confirmed]:
    """``find_candidates(buf, LEARNING_SPECS, hits)``, and its verdicts for the masking pass."""
    verdicts: list[tuple[int, Candidate | None]] = []
    found = find_candidates(buf, LEARNING_SPECS, hits, verdicts)
    return found, Confirmed(buf, verdicts, hits)


@lru_cache(maxsize=1)
def main_database() -> Database:
    """Compiled once per process (~0.2 s), shared by every Masker."""
    return spec_database(SPECS)


# The patterns no name is learned from: the masking pass of a chunk the learning pass read
# whole scans with these alone (find_with_verdicts), and takes the rest from its verdicts.
REST_SPECS: tuple[Spec, ...] = tuple(s for s in SPECS if s.entity not in LEARNED_ENTITIES)


@lru_cache(maxsize=1)
def rest_database() -> Database:
    return spec_database(REST_SPECS)


@lru_cache(maxsize=1)
def learning_database() -> Database:
    return spec_database(LEARNING_SPECS)


def learned_database(names: tuple[bytes, ...]) -> Database:
    """A small literal database for host and user names learned in the same log.

    No \\b: a learned name touching '_' (ckpt_gpu-node-17_step5) is still that name; the
    boundaries are checked in ``find_learned``.
    """
    flags = hyperscan.HS_FLAG_SOM_LEFTMOST | hyperscan.HS_FLAG_CASELESS
    expressions = [re.escape(n) for n in names]
    return Database(expressions, [flags] * len(expressions))


def _is_alnum(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122


def _touches_word(buf: bytes, start: int, end: int) -> bool:
    return (start > 0 and _is_alnum(buf[start - 1])) or (end < len(buf) and _is_alnum(buf[end]))


# The main database's hits in a buffer its caller has just scanned whole (Masker.mask's guard
# scan), for find_candidates called on the same bytes further down (HyperscanRecognizer, inside
# Presidio's analyze): one scan of the chunk, not two. Only a complete scan of the same
# database over equal bytes is handed on, so the hits are those a new scan would give.
_SCANNED: ContextVar[tuple[bytes, list[tuple[int, int, int]]] | None] = ContextVar(
    "rootcause_masking_scanned", default=None
)


@contextmanager
def scanned(buf: bytes, hits: list[tuple[int, int, int]] | None) -> Iterator[None]:
    """While inside: ``find_candidates(buf)`` with SPECS takes ``hits`` (the main database's
    complete hits in ``buf``) rather than scanning ``buf`` again."""
    if hits is None:
        yield
        return
    token = _SCANNED.set((buf, hits))
    try:
        yield
    finally:
        _SCANNED.reset(token)


def find_candidates(
    buf: bytes,
    specs: tuple[Spec, ...] = SPECS,
    hits: list[tuple[int, int, int]] | None = None,
    verdicts: list[tuple[int, Candidate | None]] | None = None,
) -> list[Candidate]:
    """Every confirmed, validated candidate in ``buf`` (overlapping; resolve afterwards).

    ``specs`` is SPECS (every pattern) or LEARNING_SPECS (the learning pass); ``hits``, the
    hits of a scan already made with ids as in ``specs``; ``verdicts`` (LEARNING_SPECS only)
    gets each anchor's verdict, for ``Confirmed``.
    """
    try:
        return _find_candidates(buf, specs, hits, verdicts)
    finally:
        forget_verdicts()


def _find_candidates(
    buf: bytes,
    specs: tuple[Spec, ...],
    hits: list[tuple[int, int, int]] | None,
    verdicts: list[tuple[int, Candidate | None]] | None,
) -> list[Candidate]:
    if hits is None and specs is SPECS:
        known = _SCANNED.get()
        if known is not None and known[0] == buf:
            hits = known[1]
    if hits is None:
        hits = (main_database() if specs is SPECS else learning_database()).scan(buf)
    # Hyperscan reports every end for a start; the longest one is the occurrence.
    no_som = _no_som(specs)
    ends = list(map(_HIT_END, hits))
    longest: dict[tuple[int, int], int]
    if not no_som and all(map(le, ends, islice(ends, 1, None))):
        # hits in the order of their ends: an anchor's last is its longest (built in C; a
        # key keeps the place of its first hit, as below)
        longest = dict(zip(map(_PID_START, hits), ends, strict=True))
    else:
        longest = {}
        for pid, start, end in hits:
            # without a start of match, each end is an occurrence of its own
            key = (pid, end if pid in no_som else start)
            if longest.get(key, -1) < end:
                longest[key] = end
    found: list[Candidate] = []
    append = found.append
    # the verdicts on the windows of values found by their end: the log's when remembered
    remembered = _REMEMBERED.get()
    seen: Verdicts = {} if remembered is None else remembered.windows
    one = _remembered(buf, specs)
    runs = _runs_of(buf)
    judged = _CONFIRMED.get() if specs is SPECS else None
    if judged is not None and judged.of(buf):
        table = judged.table()
        missing = _MISSING
        for (pid, start), end in longest.items():
            if pid in LEARNING_IDS:
                c = table.get(pid << 40 | start, missing)
                if c is not missing:
                    if c is not None:
                        append(c)
                    continue
            if pid in no_som:
                found.extend(_confirm_by_window(buf, specs[pid], end, seen, runs()))
            else:
                c = one(pid, start, end)
                if c is not None:
                    append(c)
        return found
    if verdicts is not None:
        record = verdicts.append
        for (pid, start), end in longest.items():
            if pid in no_som:
                window = _confirm_by_window(buf, specs[pid], end, seen, runs())
                c = window[0] if window else None
            else:
                c = one(pid, start, end)
            record((_MAIN_IDS[pid] << 40 | start, c))
            if c is not None:
                append(c)
        return found
    for (pid, start), end in longest.items():
        if pid in no_som:
            found.extend(_confirm_by_window(buf, specs[pid], end, seen, runs()))
        else:
            c = one(pid, start, end)
            if c is not None:
                append(c)
    return found


def _runs_of(buf: bytes) -> Callable[[], bytes]:
    """``buf`` translated by ``_RUN``, made on first use (where values found by their end may
    start: one translation of the buffer, not one of 256 bytes an anchor)."""
    made: list[bytes] = []

    def runs() -> bytes:
        if not made:
            made.append(buf.translate(_RUN))
        return made[0]

    return runs


# Past the end of what a confirmation reads (the rest of its line, or its window when no line
# break is in it), what a validator may still read after its value (a file extension).
_READ_AFTER = 16
# Verdicts remembered for one log (_remembered), at most; then forgotten all at once. Only
# those of an anchor whose reach is at most _REMEMBERED_REACH bytes (a line of a log, not a
# 4 KiB window of one without line breaks): with their keys, at most about 40 MB.
_MAX_REMEMBERED = 1 << 16
_REMEMBERED_REACH = 512


class Remembered:
    """A log's verdicts, by what each depends on: the anchors' (``_remembered``) and the
    windows' of the values found by their end (``_confirm_by_window``)."""

    __slots__ = ("anchors", "windows")

    def __init__(self) -> None:
        self.anchors: dict[tuple[int, int, int, bytes], tuple[int, int, str] | None] = {}
        self.windows: Verdicts = {}


_REMEMBERED: ContextVar[Remembered | None] = ContextVar(
    "rootcause_masking_remembered", default=None
)


@contextmanager
def remembering(verdicts: Remembered) -> Iterator[None]:
    """While inside: ``find_candidates`` keeps its verdicts in ``verdicts`` and takes them from
    there (``_remembered``): a ``Masker`` gives its own, kept for its log."""
    token = _REMEMBERED.set(verdicts)
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


@lru_cache(maxsize=8)
def _spec_ids(specs: tuple[Spec, ...]) -> tuple[int, ...]:
    """Each of ``specs``' id in SPECS: a verdict is remembered by its pattern, whatever the
    database that found it."""
    index = {id(s): i for i, s in enumerate(SPECS)}
    return tuple(index.get(id(s), -1 - i) for i, s in enumerate(specs))


def _remembered(buf: bytes, specs: tuple[Spec, ...]) -> Callable[[int, int, int], Candidate | None]:
    """``confirm_one`` for the anchors of ``specs`` (by id, start and end) in ``buf``, each
    verdict remembered by all it depends on: the pattern, the anchor's length, and the bytes
    from ``Spec.context`` before it (from the line break, for a validator that reads none
    before it) to the line break that ends what its confirmation reads. Logs print the same
    lines again and again (every rank its environment, a retry loop its command; issue 33's
    dense cluster log has 25,536 distinct lines in 262,212): a line seen before is judged by a
    dict look-up. Remembered for the log when a Masker gives its own (``remembering``), else
    for this buffer. An anchor within its context of the buffer's start, whose bytes run to
    its end, or whose reach is longer than ``_REMEMBERED_REACH``, is judged afresh."""
    plans = [s.plan for s in specs]
    contexts = [s.context for s in specs]
    crossing = [s.context_crosses_lines for s in specs]
    ids = _spec_ids(specs)
    size = len(buf)
    remembered = _REMEMBERED.get()
    verdicts = {} if remembered is None else remembered.anchors
    missing = _MISSING_VERDICT
    find, rfind = buf.find, buf.rfind

    def one(pid: int, start: int, end: int) -> Candidate | None:
        lo = start - contexts[pid]
        limit = start + _CONFIRM_WINDOW
        if limit < end:
            limit = end
        line_end = find(b"\n", end, limit)
        hi = limit + _READ_AFTER if line_end == -1 else line_end + 1
        if lo < 0 or hi >= size or hi - lo > _REMEMBERED_REACH:
            return confirm_one(buf, plans[pid], start, end)
        if not crossing[pid]:
            line = rfind(b"\n", lo, start)
            if line != -1:
                lo = line
        key = (ids[pid], start - lo, end - start, buf[lo:hi])
        known = verdicts.get(key, missing)
        if known is missing:
            c = confirm_one(buf, plans[pid], start, end)
            if len(verdicts) >= _MAX_REMEMBERED:
                verdicts.clear()
            verdicts[key] = None if c is None else (c[0] - start, c[1] - start, c[2])
            return c
        if known is None:
            return None
        return _candidate((start + known[0], start + known[1], known[2], plans[pid][6]))

    return one


_MISSING_VERDICT = (-1, -1, "")


# table()'s answer for an anchor the learning pass did not judge
_MISSING = Candidate(-2, -2, "", -2)


@lru_cache(maxsize=4)
def _no_som(specs: tuple[Spec, ...]) -> frozenset[int]:
    return frozenset(i for i, s in enumerate(specs) if not s.som)


# How far before its end a value found without a start of match may begin.
_NO_SOM_BACK = 256


# Bytes a value found by its end may hold (a host name's) -> b"a", every other byte -> b" ".
_RUN = bytes(
    97 if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b".-") else 32
    for c in range(256)
)


def _no_som_span(buf: bytes, end: int, runs: bytes | None = None) -> tuple[int, int]:
    """Where the value an anchor found without a start of match ends at may start and end.
    ``runs``: ``buf`` translated by ``_RUN``, when made already."""
    # The anchor consumed one terminator byte unless it ended at the end of a line.
    if end and not _is_alnum(buf[end - 1]):
        end -= 1
    # Its start: where the run of such bytes before the end begins (two C calls; a regex
    # searched back over the window cost half a millisecond a candidate), less what the
    # pattern cannot start with (a '.' or '-', a label left empty by "..").
    lo = max(0, end - _NO_SOM_BACK)
    if runs is None:
        start = lo + buf[lo:end].translate(_RUN).rfind(b" ") + 1
    else:
        gap = runs.rfind(b" ", lo, end)
        start = lo if gap == -1 else gap + 1
    empty = buf.rfind(b"..", start, end)
    if empty != -1:
        start = empty + 2
    while start < end and buf[start] in b".-":
        start += 1
    return start, end


# A value found by its end (a host name: fqdn, the only pattern without a start of match) is
# judged on its own bytes, the byte before and at most this many after (validate_fqdn reads
# a file extension of up to 12 bytes after a '.'): equal windows, equal verdicts. A dense log
# names the same hosts thousands of times, so find_candidates judges each window once a call.
_WINDOW_AFTER = 14
Verdicts = dict[tuple[str, bool, bytes, int], tuple[int, int, str] | None]


def _confirm_by_window(
    buf: bytes, spec: Spec, end: int, seen: Verdicts, runs: bytes | None = None
) -> list[Candidate]:
    start, stop = _no_som_span(buf, end, runs)
    key = (
        spec.name,
        start == 0,
        buf[start - 1 if start else 0 : stop + _WINDOW_AFTER],
        stop - start,
    )
    if key in seen:
        known = seen[key]
        if known is None:
            return []
        return [Candidate(start + known[0], start + known[1], known[2], spec.priority)]
    found = confirm_candidate(buf, spec, start, end)
    if len(seen) >= _MAX_REMEMBERED:
        seen.clear()
    seen[key] = (found[0].start - start, found[0].end - start, found[0].entity) if found else None
    return found


def confirm_candidate(buf: bytes, spec: Spec, start: int, end: int) -> list[Candidate]:
    """The candidate an anchor at [start, end) stands for, if its confirmation and validator
    hold (a list of none or one)."""
    found = confirm_one(buf, spec.plan, start, end)
    return [] if found is None else [found]


def confirm_one(buf: bytes, plan: Plan, start: int, end: int) -> Candidate | None:
    """``confirm_candidate`` for the anchor of the pattern whose ``Spec.plan`` is ``plan``:
    the candidate, or None."""
    match, som, quoted, validate, word, entity, priority = plan
    # Bounded: searching to the end of a long line for every candidate was quadratic.
    if som:
        limit = start + _CONFIRM_WINDOW
        if limit < end:
            limit = end
        line_end = buf.find(b"\n", end, limit)  # at or after end when found
        m = match(buf, start, limit if line_end == -1 else line_end)
    else:
        start, stop = _no_som_span(buf, end)
        m = match(buf, start, stop)
    if m is None:
        return None
    vstart, vend = m.span("v")
    if vstart == -1 and quoted:  # the alternative branch of a pattern names its value w
        vstart, vend = m.span("w")
    if vstart >= vend:
        return None
    if word and _touches_word(buf, vstart, vend):
        return None
    if validate is not None:
        verdict = validate(buf, vstart, vend, m)
        if verdict is None:
            return None
        if isinstance(verdict, tuple):
            entity, vend = verdict
            if entity is None:
                return None
        else:
            entity = verdict
    return _candidate((vstart, vend, entity, priority))


def find_learned(
    buf: bytes,
    db: Database,
    entities: tuple[str, ...],
    hits: list[tuple[int, int, int]] | None = None,
) -> list[Candidate]:
    """Mentions of names learned from context; ``entities[i]`` is the type of name i.
    ``hits``: ``db``'s every hit in ``buf`` when they are known already (else it is scanned).

    A mention is bounded by anything but a letter or digit; a '-' before a host name makes
    it part of a longer name (x-gpu-node-1), one after it does not (gpu-node-1-ib is that
    host's link). A user's name may have a '-' on both sides: Kubernetes pod names are dashed
    (pytorchjob-declan-murphy-llama-ft-worker-2).
    """
    found: list[Candidate] = []
    append = found.append
    size = len(buf)
    for pid, s, e in db.scan(buf) if hits is None else hits:
        if s > 0:
            c = buf[s - 1]  # _is_alnum or '-', inline: a few hundred mentions a chunk
            if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122:
                continue
            if c == 45 and entities[pid] == "HOSTNAME":
                continue
        if e < size:
            c = buf[e]
            if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122:
                continue
        append(Candidate(s, e, entities[pid], _LEARNED_PRIORITY))
    return found


# A PEM private-key body is at most a few KiB (an 8192-bit RSA key in PKCS#8 is ~6.5 KiB of
# base64, more with a logger's prefix on every line). A BEGIN with no END within this many
# bytes is closed here, at the end of that line: an unterminated block must not swallow the
# rest of the log (the error below it is what the diagnosis needs).
MAX_PRIVATE_KEY_BYTES = 32 * 1024
_KEY_LINE_SLACK = 4096


def _key_body_end(buf: bytes, start: int, budget: int) -> tuple[int, int]:
    """Where a body that starts at ``start`` with ``budget`` bytes left ends in ``buf``, and
    the budget left if it runs on into the next chunk (0: closed)."""
    limit = start + budget
    end = PRIVATE_KEY_END.search(buf, start, min(len(buf), limit + _KEY_LINE_SLACK))
    if end is not None and end.start() <= limit:
        return end.start(), 0
    if limit >= len(buf):
        return len(buf), limit - len(buf)
    # Out of budget: finish the line it ran out on (a bounded look), so no half line shows.
    newline = buf.find(b"\n", limit, limit + _KEY_LINE_SLACK)
    return (limit if newline == -1 else newline), 0


def find_private_keys(buf: bytes, in_key: int) -> tuple[list[tuple[int, int]], int]:
    """Spans of private-key bodies, and the budget of a block still open at the end of ``buf``
    (bytes it may still run for in the next chunk; 0 when none is open).

    The BEGIN/END markers stay (they say a key was there); the body between them is replaced.
    A block split across chunks is carried by ``in_key``; a block never runs for more than
    ``MAX_PRIVATE_KEY_BYTES`` without its END.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    if in_key:
        body_end, left = _key_body_end(buf, 0, in_key)
        if body_end > 0:
            spans.append((0, body_end))
        if left:
            return spans, left
        end = PRIVATE_KEY_END.match(buf, body_end)
        pos = end.end() if end is not None else body_end
    while True:
        i = buf.find(b"-----BEGIN ", pos)
        if i == -1:
            return spans, 0
        begin = PRIVATE_KEY_BEGIN.match(buf, i)
        if begin is None:
            pos = i + 11
            continue
        body_end, left = _key_body_end(buf, begin.end(), MAX_PRIVATE_KEY_BYTES)
        spans.append((begin.end(), body_end))
        if left:
            return spans, left
        end = PRIVATE_KEY_END.match(buf, body_end)
        pos = end.end() if end is not None else body_end


def log_findings(
    buf: bytes,
    hits: list[tuple[int, int, int]] | None = None,
    candidates: list[Candidate] | None = None,
) -> list[Candidate]:
    """What the log patterns find in ``buf`` alone (one chunk, no key block open before it):
    the resolved candidates and the private-key bodies, as ``HyperscanRecognizer`` reports
    them to Presidio. ``hits``: the main database's hits in ``buf``, when already scanned;
    ``candidates``: what ``find_candidates(buf)`` gives, when known already."""
    keys, _ = find_private_keys(buf, 0)
    if candidates is None:
        candidates = find_candidates(buf, hits=hits)
    found = resolve(candidates, keys)
    found += [Candidate(s, e, "PRIVATE_KEY", 0) for s, e in keys]
    return found


def resolve(candidates: list[Candidate], protected: list[tuple[int, int]]) -> list[Candidate]:
    """Non-overlapping spans: leftmost first, then longest, then the more specific pattern."""
    if protected:
        # protected spans are sorted and disjoint: one bisect per candidate, not a scan of all.
        starts = [ps for ps, _ in protected]
        kept_out = []
        for c in candidates:
            i = bisect_left(starts, c.end) - 1  # the last span starting before c ends
            if i < 0 or protected[i][1] <= c.start:
                kept_out.append(c)
        candidates = kept_out
    # Three stable sorts on C-level keys: by start, then the longest, then the most specific.
    # One sort with a Python key function cost four times as much on logs with 10^4 findings.
    candidates.sort(key=_PRIORITY)
    candidates.sort(key=_END, reverse=True)
    candidates.sort(key=_START)
    kept: list[Candidate] = []
    keep = kept.append
    last_end = -1
    for c in candidates:
        if c[0] >= last_end:  # start, end: indexed, a tuple's fastest read
            keep(c)
            last_end = c[1]
    return kept
