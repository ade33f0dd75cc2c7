"""Presidio's analyzer handed only what it must decide (the service's masking of one chunk).

On a log dense with findings (a value every ~140 bytes), running every recognizer over every
chunk cost about four times the Hyperscan recognizers alone: ``phonenumbers`` reading each of
thousands of phone-like windows in eight regions, and a ``RecognizerResult`` made, checked and
de-duplicated for each of the log patterns' findings. Most of that cannot change the masked
text: a validated recognizer's window that lies inside a span the log patterns already
replace (a phone number ours found, a card in a secret) can only yield a finding that
``resolve`` drops (``prefilters.covered``), and a finding of ours that no other finding of its
type overlaps comes out of Presidio as it went in.

So the masker finds the log patterns' values itself (``scanner.log_findings``: what
``HyperscanRecognizer`` reports), resolves them with the learned names, and calls the
production analyzer (``LogAnalyzerEngine.analyze_focused``, a real ``AnalyzerEngine.analyze``
of the chunk) with
- the windows of the validated recognizers that are not covered that way (they read only
  those), and
- the findings of ours that Presidio's duplicate removal could touch — those that overlap
  such a window, or whose type an operator's or an organisation's recognizer also finds
  (those recognizers read the whole chunk, as before);
the rest of ours are kept as they are. A finding Presidio adds can uncover a window that was
covered (by making ``resolve`` drop the span around it), so the windows are checked again
with its findings and Presidio is asked again until no window opens: the masked text is the
one Presidio's analysis of every window and every finding gives
(tests/rootcause/test_masking_reuse.py compares them on every test log).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from rootcause.masking.offsets import byte_offsets
from rootcause.masking.prefilters import OTHER_PRIORITY, covered
from rootcause.masking.scanner import Candidate, log_findings

if TYPE_CHECKING:
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    from rootcause.masking.masker import Masker

# A validated recognizer's window: (lo, hi) as it reads it, then (lo, hi) trimmed to where
# its findings can lie (recognizer.WindowPair).
_Pair = tuple[int, int, int, int]


class _Prefiltered(Protocol):
    @property
    def id(self) -> str: ...

    def window_pairs(self, buf: bytes) -> list[_Pair]: ...


class FocusedAnalyzer(Protocol):
    """What of ``recognizer.LogAnalyzerEngine`` a focused analysis uses (typed here: the
    light client imports this module without Presidio)."""

    def focusable(self) -> bool: ...

    def prefiltered(self) -> Sequence[_Prefiltered]: ...

    def other_entities(self, ad_hoc: Sequence[EntityRecognizer]) -> frozenset[str]: ...

    def focus(
        self, buf: bytes, ours: list[Candidate], windows: dict[str, list[tuple[int, int]]]
    ) -> object: ...

    def analyze_focused(
        self, text: str, focus: object, ad_hoc: Sequence[EntityRecognizer]
    ) -> list[RecognizerResult]: ...


def as_candidates(chunk: str, buf: bytes, results: list[RecognizerResult]) -> list[Candidate]:
    """Presidio's results (character offsets in ``chunk``) as candidates in ``buf``."""
    spans = byte_offsets(chunk, buf, [(r.start, r.end) for r in results])
    found = []
    for r, (s, e) in zip(results, spans, strict=True):
        if s < e:
            meta = r.recognition_metadata
            priority = meta.get("priority", OTHER_PRIORITY) if meta else OTHER_PRIORITY
            found.append(Candidate(s, e, r.entity_type, priority))
    return found


def focused_spans(
    masker: Masker,
    analyzer: FocusedAnalyzer,
    chunk: str,
    buf: bytes,
    keys: list[tuple[int, int]],
) -> list[Candidate]:
    """What is replaced in a chunk, as ``Masker._spans`` finds it with the analyzer reading
    every window and every finding, Presidio asked only what it must decide (module doc)."""
    ours = log_findings(buf, masker.take_hits())
    ad_hoc = masker.ad_hoc
    others = analyzer.other_entities(ad_hoc)
    pairs = {r.id: r.window_pairs(buf) for r in analyzer.prefiltered()}
    asked: dict[str, list[tuple[int, int]]] = {}
    found = ours
    spans = masker.resolved(buf, list(found), keys)
    while True:
        starts = [c.start for c in spans]
        opened = False
        for rid, windows in pairs.items():
            kept = []
            for pair in windows:
                if covered(pair[2], pair[3], spans, starts):
                    kept.append(pair)
                else:
                    asked.setdefault(rid, []).append((pair[0], pair[1]))
                    opened = True
            pairs[rid] = kept
        if not opened and found is not ours:
            return spans
        near, far = _split(ours, asked, others)
        focus = analyzer.focus(buf, near, {rid: sorted(w) for rid, w in asked.items()})
        results = analyzer.analyze_focused(chunk, focus, ad_hoc)
        found = far + as_candidates(chunk, buf, results)
        spans = masker.resolved(buf, list(found), keys)


def _split(
    ours: list[Candidate], asked: dict[str, list[tuple[int, int]]], others: frozenset[str]
) -> tuple[list[Candidate], list[Candidate]]:
    """Ours that Presidio's duplicate removal could touch (overlapping an asked window, or of
    a type another recognizer finds over the whole text), and the rest."""
    if not asked and not others:
        return [], ours
    merged = _merged(w for windows in asked.values() for w in windows)
    his = [hi for _, hi in merged]
    near: list[Candidate] = []
    far: list[Candidate] = []
    for c in ours:
        i = bisect_left(his, c.start + 1)  # the first window ending after c starts
        touches = i < len(merged) and merged[i][0] < c.end
        (near if touches or c.entity in others else far).append(c)
    return near, far


def _merged(windows: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(windows):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
