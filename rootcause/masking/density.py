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

from functools import lru_cache

import hyperscan

from rootcause.masking.patterns import SPECS
from rootcause.masking.prefilters import PREFILTERS
from rootcause.masking.scanner import Database, spec_flags

DENSE_ENTITY = "DENSE_LINE"
DENSE_TOKEN = b"<DENSE_LINE>"
SEGMENT = 1024
# What the recognizers may be given: a few candidates per segment and one per 48 bytes (an
# ordinary log has about one per kilobyte; the densest chunk of the corpora, 0.75 of the
# budget). A candidate is a pattern and a start (as find_candidates confirms them); a hit of a
# Presidio prefilter counts PREFILTER_WEIGHT (a Presidio recognizer then reads its window).
BASE_HITS = 24
BYTES_PER_HIT = 48
PREFILTER_WEIGHT = 4

Hits = list[tuple[int, int, int]]


def budget(size: int) -> int:
    return BASE_HITS + size // BYTES_PER_HIT


@lru_cache(maxsize=1)
def guard_database() -> Database:
    """Every masking pattern (ids as in SPECS) and every Presidio prefilter after them."""
    expressions = [s.hs for s in SPECS] + [pattern for pattern, _ in PREFILTERS.values()]
    flags = [spec_flags(s) for s in SPECS] + [hyperscan.HS_FLAG_SOM_LEFTMOST] * len(PREFILTERS)
    return Database(expressions, flags, cache=True)


def bounded_hits(buf: bytes, limit: int) -> tuple[Hits, bool]:
    """The guard database's hits in ``buf`` and True, or the first of them and False as soon
    as they cost more than ``limit`` (the scan stops there: a bounded number of callbacks
    whatever the input)."""
    specs = len(SPECS)
    hits: Hits = []
    seen: set[tuple[int, int]] = set()
    cost = 0

    def on_match(pid: int, start: int, end: int, flags: int, context: object) -> bool:
        nonlocal cost
        hits.append((pid, start, end))
        if pid >= specs:
            cost += PREFILTER_WEIGHT
        elif (pid, start) not in seen:
            seen.add((pid, start))
            cost += 1
        return cost > limit

    return hits, guard_database().scan_until(buf, on_match)


def dense_regions(buf: bytes) -> tuple[list[tuple[int, int]], Hits | None]:
    """Byte spans of ``buf`` to mask whole (line-aligned, in order; none for ordinary text),
    and when there are none, the guard's hits (the masking patterns' are those of SPECS)."""
    hits, complete = bounded_hits(buf, budget(len(buf)))
    if complete:
        return [], hits
    regions: list[tuple[int, int]] = []
    start = 0
    while start < len(buf):
        nl = buf.find(b"\n", min(start + SEGMENT, len(buf)) - 1)
        end = len(buf) if nl == -1 else nl + 1
        segment = buf[start:end]
        found, complete = bounded_hits(segment, budget(len(segment)))
        if not complete:
            first = min(e for _, _, e in found)
            line = segment.rfind(b"\n", 0, max(first - 1, 0)) + 1
            if regions and regions[-1][1] == start + line:
                regions[-1] = (regions[-1][0], end)
            else:
                regions.append((start + line, end))
        start = end
    return regions, None


def marked_whole(body: bytes) -> bytes:
    """What a dense region becomes: one marker per line, the line breaks kept."""
    tail = b"" if body.endswith(b"\n") else DENSE_TOKEN
    return (DENSE_TOKEN + b"\n") * body.count(b"\n") + tail


def lines_in(body: bytes) -> int:
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
