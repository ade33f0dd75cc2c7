"""Writes favicon.ico beside this file: favicon.svg's mark drawn at 32 x 32 (a PNG inside an
ICO), with the standard library alone. Run it again after changing the mark:
`python config/mark/make_ico.py`."""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

SIZE = 32
BLUE = (0x0B, 0x5C, 0xAD)
WHITE = (0xFF, 0xFF, 0xFF)
# favicon.svg's strokes: (x1, y1, x2, y2), 3 px wide with round caps
STROKES = [(16, 5, 16, 17), (16, 17, 9, 26), (16, 17, 23, 26), (16, 17, 16, 27)]
RADIUS = 6


def _segment_distance(px: float, py: float, x1: float, y1: float, x2: float, y2: float) -> float:
    dx, dy = x2 - x1, y2 - y1
    t = max(0.0, min(1.0, ((px - x1) * dx + (py - y1) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (x1 + t * dx), py - (y1 + t * dy))


def _inside_rounded_square(px: float, py: float) -> bool:
    cx = min(max(px, RADIUS), SIZE - RADIUS)
    cy = min(max(py, RADIUS), SIZE - RADIUS)
    return math.hypot(px - cx, py - cy) <= RADIUS


def pixel(x: int, y: int) -> tuple[int, int, int, int]:
    px, py = x + 0.5, y + 0.5
    if not _inside_rounded_square(px, py):
        return (0, 0, 0, 0)
    if min(_segment_distance(px, py, *s) for s in STROKES) <= 1.5:
        return (*WHITE, 255)
    return (*BLUE, 255)


def png() -> bytes:
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def ico() -> bytes:
    image = png()
    directory = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", SIZE, SIZE, 0, 0, 1, 32, len(image), 6 + 16)
    return directory + entry + image


if __name__ == "__main__":
    Path(__file__).with_name("favicon.ico").write_bytes(ico())
