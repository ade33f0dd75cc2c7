"""Line-aligned, bounded-size chunks of a log, decoded to text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeVar

_Chunk = TypeVar("_Chunk", str, bytes)

# When a single line is longer than a chunk, cut it at the last blank in this tail so a token
# is not split between two chunks (a split token would be seen by no pattern).
_BLANK_SEARCH = 4096


def _cut(buf: bytearray, limit: int, more: bool) -> int:
    """Where to end the next chunk: after the last line break before ``limit``."""
    cut = buf.rfind(b"\n", 0, limit)
    if cut != -1:
        return cut + 1
    # A lone \r ends a progress-bar update; never split a \r\n pair across chunks.
    cut = buf.rfind(b"\r", 0, limit)
    if cut != -1 and (cut + 1 < len(buf) or not more) and buf[cut + 1 : cut + 2] != b"\n":
        return cut + 1
    floor = max(1, limit - _BLANK_SEARCH)
    for blank in (b" ", b"\t"):
        cut = buf.rfind(blank, floor, limit)
        if cut != -1:
            return cut + 1
    # No blank either: cut at a character boundary, never inside a UTF-8 sequence.
    cut = limit
    while cut > limit - 3 and (buf[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


def _decode(raw: bytes | bytearray) -> str:
    return bytes(raw).replace(b"\x00", b"").replace(b"\r\n", b"\n").decode("utf-8", "replace")


def _pieces(source: BinaryIO | Iterable[bytes], size: int) -> Iterator[bytes]:
    if hasattr(source, "read"):
        while block := source.read(size):
            yield block
        return
    for piece in source:
        # Slice large pieces so one huge bytes object is not copied whole into the buffer.
        for i in range(0, len(piece), size):
            yield piece[i : i + size]


def _encoded(raw: bytes | bytearray) -> bytes:
    """``_decode(raw).encode("utf-8", "surrogatepass")``, without the text when the bytes are
    valid UTF-8 already (they are then what the text encodes to)."""
    clean = bytes(raw).replace(b"\x00", b"").replace(b"\r\n", b"\n")
    if not clean.isascii():
        try:
            clean.decode("utf-8")
        except UnicodeDecodeError:
            return clean.decode("utf-8", "replace").encode("utf-8", "surrogatepass")
    return clean


def iter_line_chunks(
    source: BinaryIO | Iterable[bytes], chunk_size: int = 1 << 20
) -> Iterator[str]:
    """Yield text chunks of at most ``chunk_size`` bytes that end at a line break.

    Decodes UTF-8 with replacement, drops NUL bytes and turns \\r\\n into \\n; a lone \\r
    (tqdm redraws) is kept. A line longer than ``chunk_size`` is cut, at a blank if it has one,
    so memory stays bounded by about two chunks whatever the input.
    """
    return _line_chunks(source, chunk_size, _decode)


def iter_line_chunks_utf8(
    source: BinaryIO | Iterable[bytes], chunk_size: int = 1 << 20
) -> Iterator[bytes]:
    """``iter_line_chunks``'s chunks UTF-8 encoded (``chunk.encode("utf-8", "surrogatepass")``,
    what ``Masker.learn_bytes`` and ``mask_bytes`` take)."""
    return _line_chunks(source, chunk_size, _encoded)


def _line_chunks(
    source: BinaryIO | Iterable[bytes],
    chunk_size: int,
    finish: Callable[[bytes | bytearray], _Chunk],
) -> Iterator[_Chunk]:
    if chunk_size < 16:
        raise ValueError("chunk_size must be at least 16 bytes")
    buf = bytearray()
    for piece in _pieces(source, chunk_size):
        buf += piece
        while len(buf) > chunk_size:
            cut = _cut(buf, chunk_size, more=True)
            yield finish(buf[:cut])
            del buf[:cut]
    while buf:
        cut = _cut(buf, chunk_size, more=False) if len(buf) > chunk_size else len(buf)
        yield finish(buf[:cut])
        del buf[:cut]
