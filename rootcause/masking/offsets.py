"""Byte offsets (what Hyperscan and the masker use) and character offsets (what Presidio uses)."""

from __future__ import annotations


def char_offsets(text: str, buf: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in ``buf`` (``text`` encoded as UTF-8) as spans in ``text``."""
    if len(buf) == len(text):  # ASCII: the same offsets
        return spans
    points = sorted({p for span in spans for p in span})
    mapping: dict[int, int] = {}
    chars = 0
    prev = 0
    for p in points:  # one left-to-right pass over sorted positions
        chars += len(buf[prev:p].decode("utf-8", "surrogatepass"))
        mapping[p] = chars
        prev = p
    return [(mapping[s], mapping[e]) for s, e in spans]


def byte_offsets(text: str, buf: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in ``text`` as spans in ``buf``, its UTF-8 encoding."""
    if len(buf) == len(text):
        return spans
    points = sorted({p for span in spans for p in span})
    mapping: dict[int, int] = {}
    size = 0
    prev = 0
    for p in points:
        size += len(text[prev:p].encode("utf-8", "surrogatepass"))
        mapping[p] = size
        prev = p
    return [(mapping[s], mapping[e]) for s, e in spans]
