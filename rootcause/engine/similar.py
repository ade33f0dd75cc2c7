"""The similarity fallback: when no fingerprint holds, the catalogue signature a log's error
lines most resemble, by character n-gram likeness, proposed at low confidence.

Likeness is the Dice coefficient of the two texts' sets of character trigrams, after both are
normalised (lower case, rank prefixes off, numbers and paths made alike): pure Python on a few
dozen short lines, so the light client needs no extra package (rapidfuzz was tried: its token-set
ratio found half as many classes on the development corpora, and its wheel is 12 MB).

It never competes with a fingerprint (the engine asks it only when no entry held), reads a
bounded number of lines (the first and last error-looking lines the scan kept, and the log's
last lines), and skips lines the run went on training after, so a caught-and-recovered error or
a warning in a healthy run proposes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rootcause.catalogue import Entry
from rootcause.engine.scanning import RECOVERY_PROGRESS_LINES, Scan, is_training_line

# Below this likeness (0-100) a line resembles no signature well enough to say anything. The
# best line of any healthy log in dev, dev2 and tests/logs reaches 42.
MIN_SIMILARITY = 60.0
NGRAM = 3
# The confidence a proposal gets: low, under the engine's MIN_CONFIDENCE for a fingerprint.
CONFIDENCE_LOW, CONFIDENCE_HIGH = 0.2, 0.29
# Lines shorter than this (normalised) carry too few n-grams to compare.
MIN_CHARS = 24
COMPARED_CHARS = 240

_PREFIX_RE = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|[A-Za-z0-9_.<>-]{1,64}:\s+(?=\[))+")
_NUMBER_RE = re.compile(r"0x[0-9a-f]+|\d+(?:\.\d+)?")
_PATH_RE = re.compile(r"(?:/[\w.<>~-]+){2,}")
_SPACE_RE = re.compile(r"\s+")
# An error code the text states (`cuda runtime error (10)`, THCudaCheck's `error=2`): numbers are
# made alike for the likeness, but two different codes are two different errors, however alike
# the rest of the line (`invalid device ordinal` is not `out of memory`).
_CODE_RE = re.compile(r"(?i)\bcuda runtime error \((\d{1,4})\)|\berror=(\d{1,4})\b")
# A line that reads like an error, among the log's last lines.
ERRORISH_RE = re.compile(
    r"(?i)error|fail|exception|fatal|abort|killed|cannot|unable|exceeded|timed? ?out|"
    r"out of memory|not found|refused|denied|invalid|illegal|mismatch"
)

# A warning, however it is worded, reports no failure: a tokenizer's "Token indices sequence
# length is longer than the specified maximum ... will result in indexing errors" comes before
# training that goes on, and Python's `UserWarning:` lines are not errors either, nor are
# TensorFlow's own warning and info lines (`2021-02-10 12:57:07.427237: W tensorflow/...] Could
# not load dynamic library 'libcudart.so.11.0'`, after which it runs on the CPU).
WARNING_RE = re.compile(
    r"\b[A-Z][A-Za-z]{0,40}Warning: |will result in indexing errors|^\s*warnings\.warn\(|"
    r"\d\d:\d\d:\d\d\.\d{6}: [WI] tensorflow/"
)


def ngrams(text: str) -> frozenset[str]:
    return frozenset(text[i : i + NGRAM] for i in range(max(1, len(text) - NGRAM + 1)))


def error_code(text: str) -> str | None:
    m = _CODE_RE.search(text)
    return (m.group(1) or m.group(2)) if m else None


def normalise(text: str) -> str:
    """Lower case, rank prefixes off, numbers and paths made alike, spaces collapsed."""
    text = _PREFIX_RE.sub("", text.strip()[: 2 * COMPARED_CHARS])
    text = _PATH_RE.sub("/p", text.lower())
    text = _NUMBER_RE.sub("0", text)
    return _SPACE_RE.sub(" ", text).strip()[:COMPARED_CHARS]


@dataclass(frozen=True)
class Proposal:
    entry: int  # index into the engine's entries
    similarity: float  # 0-100
    signature: str  # the catalogue's wording it resembles
    line: int
    source: int
    text: str  # the log's line

    @property
    def confidence(self) -> float:
        share = (self.similarity - MIN_SIMILARITY) / (100.0 - MIN_SIMILARITY)
        return round(CONFIDENCE_LOW + (CONFIDENCE_HIGH - CONFIDENCE_LOW) * share, 2)


class SignatureIndex:
    """The catalogue's signatures, normalised once per engine."""

    def __init__(self, entries: list[Entry]) -> None:
        self.owners: list[int] = []
        self.signatures: list[str] = []
        self.grams: list[frozenset[str]] = []
        self.codes: list[str | None] = []
        for index, entry in enumerate(entries):
            for signature in entry.signatures:
                norm = normalise(str(signature))
                if len(norm) >= MIN_CHARS:
                    self.owners.append(index)
                    self.signatures.append(str(signature))
                    self.grams.append(ngrams(norm))
                    self.codes.append(error_code(str(signature)))

    def nearest(self, lines: list[tuple[int, int, str]]) -> Proposal | None:
        """The best (line, signature) pair above MIN_SIMILARITY; lines are (source, line, text)."""
        best: Proposal | None = None
        seen: set[str] = set()
        for source, lineno, text in lines:
            query = normalise(text)
            if len(query) < MIN_CHARS or query in seen:
                continue
            seen.add(query)
            found = self._best(ngrams(query), error_code(text))
            if found is None:
                continue
            score, k = found
            if best is None or score > best.similarity:
                best = Proposal(
                    self.owners[k], score, self.signatures[k], lineno, source, text.strip()
                )
        return best

    def _best(self, grams: frozenset[str], code: str | None) -> tuple[float, int] | None:
        """(likeness 0-100, signature index) of the closest signature at MIN_SIMILARITY or more,
        among those stating no other error code."""
        best: tuple[float, int] | None = None
        size = len(grams)
        for k, other in enumerate(self.grams):
            if code is not None and self.codes[k] not in (None, code):
                continue
            total = size + len(other)
            # Dice cannot reach the threshold when the sizes alone are too far apart
            if 200.0 * min(size, len(other)) / total < MIN_SIMILARITY:
                continue
            score = 200.0 * len(grams & other) / total
            if score >= MIN_SIMILARITY and (best is None or score > best[0]):
                best = (round(score, 1), k)
        return best


def candidate_lines(scan: Scan) -> list[tuple[int, int, str]]:
    """The error-looking lines worth comparing: the ones the scan kept, and the log's last lines
    that read as an error, minus any the run went on training after (or said it handled)."""
    kept = [(h.source, h.line, h.text) for h in (*scan.error_lines, *scan.error_tail)]
    kept += [
        (source, line, text)
        for text, (source, line) in zip(scan.tail, scan.tail_at, strict=True)
        if ERRORISH_RE.search(text[:COMPARED_CHARS])
    ]
    return [
        c
        for c in kept
        if not WARNING_RE.search(c[2][: 2 * COMPARED_CHARS])
        and not _went_on_after(scan, (c[0], c[1]))
    ]


def _went_on_after(scan: Scan, at: tuple[int, int]) -> bool:
    if any(r >= at for r in scan.recoveries) or any(r >= at for r in scan.resumed_after):
        return True
    progress = sum(
        is_training_line(t) for t, where in zip(scan.tail, scan.tail_at, strict=True) if where > at
    )
    return progress >= RECOVERY_PROGRESS_LINES


_INDEXES: dict[int, tuple[list[Entry], SignatureIndex]] = {}


def index_for(entries: list[Entry]) -> SignatureIndex:
    """The signature index of an engine's entry list, built once per list (a process holds one
    engine per catalogue version, so this stays small)."""
    held = _INDEXES.get(id(entries))
    if held is None or held[0] is not entries:
        if len(_INDEXES) >= 8:
            _INDEXES.clear()
        held = _INDEXES[id(entries)] = (entries, SignatureIndex(entries))
    return held[1]
