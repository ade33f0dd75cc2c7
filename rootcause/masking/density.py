"""Lines too dense with candidates to mask one by one are masked whole: linear cost per byte.

Every Hyperscan hit costs Python work (a callback, then a confirmation and a validator: about
5 µs). An ordinary log has about one hit per kilobyte; 10 MB of ``1.``, ``:`` or ``a@`` has one
on every byte or two, and masking it cost 20 to 80 times as much per megabyte. So before any
recognizer reads a chunk, one scan of the guard database (every masking anchor and Presidio's
prefilters, without start of match: cheap) counts hits against a budget and stops at the
budget (a stopped scan costs nothing more):

1. the whole chunk, with a budget of ``budget(len(chunk))``: an ordinary chunk stays well under
   it, and is masked exactly as it always was;
2. a chunk over it, segment by segment (whole lines, about 1 KiB each; a longer line alone):
   a segment under its own budget is kept for the recognizers; one over it is masked whole
   from the line of its first hit to its end, each line replaced by ``<DENSE_LINE>`` (the line
   count is kept: evidence is cited by line number), counted as ``DENSE_LINE``.

Whatever the input, the recognizers then see at most about ``budget`` hits per byte, and the
guard itself at most that many callbacks: work per megabyte is bounded by a constant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import hyperscan

from rootcause.masking.patterns import SPECS
from rootcause.masking.prefilters import PREFILTERS
from rootcause.masking.scanner import Database, spec_flags, spec_starts

DENSE_ENTITY = "DENSE_LINE"
DENSE_TOKEN = b"<DENSE_LINE>"
SEGMENT = 1024
PROBE = 16
# What the recognizers may be given: a few candidates per segment and one per 32 bytes (an
# ordinary log has about one per kilobyte; a diverging run printing 15-digit losses on every
# line, the densest log of the corpora, about one per 40 bytes). A candidate is a pattern and a
# start (as find_candidates confirms them); one of a Presidio prefilter counts PREFILTER_WEIGHT
# (a Presidio recognizer then reads its window).
BASE_HITS = 32
BYTES_PER_HIT = 32
PREFILTER_WEIGHT = 2

Hits = list[tuple[int, int, int]]
_NEWLINE = re.compile(rb"\n")


def budget(size: int) -> int:
    return BASE_HITS + size // BYTES_PER_HIT


def chunk_budget(size: int) -> int:
    """The first check, on a whole chunk: half a segment's rate. A chunk over it is only read
    segment by segment (which decides); a hostile one is found after half the callbacks."""
    return BASE_HITS + size // (2 * BYTES_PER_HIT)


@lru_cache(maxsize=1)
def guard_database() -> Database:
    """Every masking pattern (ids as in SPECS) and every Presidio prefilter after them."""
    expressions = [s.hs for s in SPECS] + [pattern for pattern, _ in PREFILTERS.values()]
    flags = [spec_flags(s) for s in SPECS] + [hyperscan.HS_FLAG_SOM_LEFTMOST] * len(PREFILTERS)
    return Database(expressions, flags, cache=True, starts=spec_starts(SPECS))


def bounded_hits(buf: bytes, limit: int) -> tuple[Hits, bool]:
    """The guard database's hits in ``buf`` and True, or the first of them and False as soon
    as they cost more than ``limit`` (the scan stops there: a bounded number of callbacks
    whatever the input)."""
    return bounded_scan(guard_database(), buf, limit, len(SPECS))


def bounded_scan(
    db: Database, buf: bytes, limit: int, specs: int, hit_limit: int | None = None
) -> tuple[Hits, bool]:
    """``bounded_hits`` with another database: ids from ``specs`` on are prefilters.
    ``hit_limit``: the number of hits over which it stops (twice ``limit`` unless given)."""
    hits: Hits = []
    append = hits.append
    seen: set[tuple[int, int]] = set()
    cost = 0
    most = 2 * limit if hit_limit is None else hit_limit
    # A hit costs at most its weight: up to this many hits, the count cannot be over the
    # limit, and they are only kept (the callback of every hit of an ordinary chunk); the
    # anchors are counted from the first hit after them on.
    free = min(most, limit if specs >= 1 << 30 else limit // PREFILTER_WEIGHT)
    counting = False
    # The patterns whose start Hyperscan does not track (Database.starts): the kept hits'
    # starts are filled in once counting starts or after the scan, the counted ones' at once.
    starts = db.starts

    def on_match(pid: int, start: int, end: int, flags: int, context: object) -> bool:
        nonlocal cost, counting
        if not counting:
            append((pid, start, end))
            if len(hits) <= free:
                return False
            counting = True
            hits[:] = db.filled(buf, hits)
            for p, s, _ in hits[:-1]:
                if (p, s) not in seen:
                    seen.add((p, s))
                    cost += PREFILTER_WEIGHT if p >= specs else 1
            start = hits[-1][1]
        else:
            start_of = starts.get(pid)
            if start_of is not None:
                start = start_of(buf, end)
            append((pid, start, end))
        if (pid, start) not in seen:
            seen.add((pid, start))
            cost += PREFILTER_WEIGHT if pid >= specs else 1
        # many ends of one candidate cost callbacks too: twice the budget of them at most
        return cost > limit or len(hits) > most

    complete = db.scan_raw_until(buf, on_match)
    return (hits if counting else db.filled(buf, hits)), complete


Scan = Callable[[bytes, int], tuple[Hits, bool]]


def dense_regions(
    buf: bytes, scan: Scan = bounded_hits
) -> tuple[list[tuple[int, int]], Hits | None]:
    """Byte spans of ``buf`` to mask whole (line-aligned, in order; none for ordinary text),
    and when there are none, the guard's hits (the masking patterns' are those of SPECS).
    ``scan``: another bounded scan than the guard's (the names learned from a log)."""
    hits, complete = scan(buf, chunk_budget(len(buf)))
    if complete:
        return [], hits
    regions: list[tuple[int, int]] = []
    # The end of a dense segment after the line where it ran over its budget: dense too if the
    # next segment is dense from its start (inside a run, one scan per segment), else judged
    # again line by line (where a run ends, so that the lines after it are kept).
    tail: tuple[int, int] | None = None
    start = 0
    while start < len(buf):
        nl = buf.find(b"\n", min(start + SEGMENT, len(buf)) - 1)
        end = len(buf) if nl == -1 else nl + 1
        if start == 0 and end == len(buf):
            # one segment, the whole chunk (one long line): judged by the scan above
            found, complete = hits, False
        else:
            # Inside a run (the previous segment ran over): a small budget tells whether this
            # one is dense from its start, after a few callbacks rather than a segment's worth.
            limit = PROBE if tail is not None else budget(end - start)
            found, complete = scan(buf[start:end], limit)
        first, last = (end, end) if complete else _dense_lines(buf, start, found)
        if tail is not None:
            if first == start:
                _add(regions, tail)
            else:
                _refine(buf, tail, regions, scan)
            tail = None
        if not complete:
            _add(regions, (first, last))
            if last < end:
                tail = (last, end)
        start = end
    if tail is not None:
        _refine(buf, tail, regions, scan)
    return regions, None


def _add(regions: list[tuple[int, int]], region: tuple[int, int]) -> None:
    if regions and regions[-1][1] >= region[0]:
        regions[-1] = (regions[-1][0], max(regions[-1][1], region[1]))
    else:
        regions.append(region)


def _refine(buf: bytes, tail: tuple[int, int], regions: list[tuple[int, int]], scan: Scan) -> None:
    """Where a dense run ends inside ``tail`` (whole lines): the shortest suffix of its lines
    within its budget is kept, the lines before it are dense. A binary search over the line
    starts: a few bounded scans of at most a segment each."""
    start, end = tail
    starts = [start] + [m.end() for m in _NEWLINE.finditer(buf, start, end - 1)]
    lo, hi = 0, len(starts)  # the suffix from starts[hi] (or none) is known to be light
    while lo < hi:
        mid = (lo + hi) // 2
        _, complete = scan(buf[starts[mid] : end], budget(end - starts[mid]))
        if complete:
            hi = mid
        else:
            lo = mid + 1
    if lo > 0:
        _add(regions, (start, starts[lo] if lo < len(starts) else end))


def _dense_lines(buf: bytes, start: int, found: Hits) -> tuple[int, int]:
    """Where a segment that ran over its budget is dense: from the first line over a line's
    budget (if no line is, many short lines each with a few hits: from the first line with a
    hit) to the end of the line where it ran over.

    ``found`` are the segment's hits up to that point, in order of their end; each line is
    walked once, so this is linear in what the scan read.
    """
    seen: set[tuple[int, int]] = set()
    line_start, line_end, line_cost = start, -1, 0
    first = first_hit = -1
    for pid, s, e in found:
        at = start + max(e - 1, 0)
        if at >= line_end:
            if line_end != -1 and first == -1 and line_cost > _line_budget(line_end - line_start):
                first = line_start
            line_start = buf.rfind(b"\n", max(line_end, start), at) + 1 or max(line_end, start)
            nl = buf.find(b"\n", at)
            line_end = len(buf) if nl == -1 else nl + 1
            line_cost = 0
            if first_hit == -1:
                first_hit = line_start
        if (pid, s) not in seen:
            seen.add((pid, s))
            line_cost += PREFILTER_WEIGHT if pid >= len(SPECS) else 1
    if first == -1 and line_cost > _line_budget(line_end - line_start):
        first = line_start  # the line where the budget ran out
    return (first_hit if first == -1 else first), line_end


def _line_budget(size: int) -> int:
    return 4 + size // BYTES_PER_HIT


def marked_whole(body: bytes) -> bytes:
    """What a dense region becomes: the marker on its first line, its other lines empty (the
    line breaks kept; a region of 4-byte lines must not triple in size)."""
    return DENSE_TOKEN + b"\n" * body.count(b"\n")


def lines_in(body: bytes) -> int:
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
