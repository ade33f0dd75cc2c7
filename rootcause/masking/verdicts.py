"""The masking pass of a chunk the learning pass read whole: one scan with the other patterns.

The learning pass (``Masker.learn``) scans every chunk with the learning patterns and keeps
their verdicts (``scanner.Confirmed``). The main database holds those patterns too, so masking
the same bytes used to scan them again (on issue 33's dense cluster log, 193,206 of the main
database's 399,679 hits and about two thirds of its scan time: start-of-match tracking). Here the
masking pass scans with the other patterns alone (``scanner.REST_SPECS``) and adds the learning
patterns' candidates from the verdicts: the same candidates ``find_candidates`` gives, since a
pattern's matches do not depend on the database it is in.

The same masked text, not only the same candidates:

- the guard (density.py) counts the main database's hits against the chunk's budget; those of
  the learning patterns are known from the learning pass's scan of the same bytes, so the scan
  here stops where the main database's would have, and an over-budget chunk goes the long way;
- the candidates come in another order than the main database's hits would give them, and the
  order decides between two candidates of the same span and priority (``resolve`` keeps the
  first): a chunk with two such candidates of different types goes the long way;
- the names learned while masking come from the candidates in their order (the first 512 are
  kept): the other patterns find no type a name is learned from (a chunk where one did would
  go the long way), and the learning patterns' names were all learned by the learning pass.
"""

from __future__ import annotations

from operator import itemgetter

from rootcause.masking.density import bounded_scan
from rootcause.masking.scanner import (
    LEARNED_ENTITIES,
    REST_SPECS,
    Candidate,
    Confirmed,
    find_candidates,
    rest_database,
)

_SPAN_PRIORITY = itemgetter(0, 1, 3)  # a Candidate's start, end and priority


def find_with_verdicts(buf: bytes, known: Confirmed, limit: int) -> list[Candidate] | None:
    """``find_candidates(buf)`` for a chunk whose main-database scan with the guard's ``limit``
    (``bounded_scan``) would have been complete, from one scan with ``REST_SPECS`` and
    ``known`` (the learning pass's verdicts on equal bytes); None when the long way is needed
    (see the module's docstring)."""
    if known.scanned is None or not known.of(buf):
        return None
    anchors, count = known.scanned
    if anchors > limit or count > 2 * limit:
        return None
    hits, complete = bounded_scan(rest_database(), buf, limit - anchors, 1 << 30, 2 * limit - count)
    if not complete:
        return None
    found = find_candidates(buf, REST_SPECS, hits)
    if any(c.entity in LEARNED_ENTITIES for c in found):
        return None
    found += known.candidates()
    # two candidates of one span and priority but of different types (counted in C: as many
    # distinct spans and priorities as distinct candidates, or two differ only by type)
    if len(set(map(_SPAN_PRIORITY, found))) != len(set(found)):
        return None
    return found
