"""Turning a request body into a stream of log bytes, without holding or spooling it whole."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Protocol

from config.problems import ApplicationError

READ_SIZE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def read_chunks(stream: Readable, size: int = READ_SIZE) -> Iterator[bytes]:
    while chunk := stream.read(size):
        yield chunk


def gunzip_if_needed(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Decompresses a gzip stream on the fly; other input passes through unchanged.

    The decompressed size is bounded downstream by the intake limit, so a gzip bomb costs at most
    one chunk of memory before it is refused.
    """
    iterator = iter(chunks)
    first = next(iterator, b"")
    if not first.startswith(GZIP_MAGIC):
        yield from chain([first], iterator)
        return
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        for data in chain([first], iterator):
            while data:
                out = decompressor.decompress(data, READ_SIZE)
                if out:
                    yield out
                data = decompressor.unconsumed_tail
        tail = decompressor.flush()
        if tail:
            yield tail
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:
        raise ApplicationError(f"The upload is not valid gzip: {exc}") from None
