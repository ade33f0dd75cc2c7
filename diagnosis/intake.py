"""Turning a request body into a stream of log bytes, without holding or spooling it whole."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Protocol

from django.http import HttpRequest
from gunicorn.http.errors import (  # type: ignore[import-untyped]  # no types
    NoMoreData,
    ParseException,
)

from plumbing.problems import ApplicationError

READ_SIZE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class LengthRequired(ApplicationError):
    status_code = 411
    title = "Length required"


def read_chunks(stream: Readable, size: int = READ_SIZE) -> Iterator[bytes]:
    """The stream's bytes as they arrive. A body the server cannot decode (gunicorn raises, as
    it reads, on a chunk size that is no number, a chunk without its CRLF, a connection closed
    inside a chunk) is the caller's malformed request, a 400, not our error."""
    try:
        while chunk := stream.read(size):
            yield chunk
    except (ParseException, NoMoreData) as exc:
        raise ApplicationError(
            f"The body is malformed ({type(exc).__name__}): send it again, with a "
            "Content-Length or valid chunks."
        ) from None


def body_chunks(request: HttpRequest, size: int = READ_SIZE) -> Iterator[bytes]:
    """The raw request body as it arrives, refused if it stops short of its Content-Length.

    A client that disconnects mid-upload leaves the WSGI stream at EOF early; without the count
    the part that arrived was diagnosed as the whole log. A chunked upload has no
    Content-Length, so Django's own stream reads it as empty: it is read from ``wsgi.input``
    when the server has decoded the chunks and marks the input terminated (gunicorn does,
    ``wsgi.input_terminated``); a server that does not (the development server) gets a 411. Its
    size is bounded downstream by the intake limit, as for any body.
    """
    meta = request.META
    declared = meta.get("CONTENT_LENGTH") or ""
    if not declared and "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        if not meta.get("wsgi.input_terminated"):
            raise LengthRequired("This server cannot read a chunked upload: send a Content-Length.")
        yield from read_chunks(meta["wsgi.input"], size)
        return
    expected = int(declared) if declared.isdigit() else 0
    received = 0
    for chunk in read_chunks(request, size):
        received += len(chunk)
        yield chunk
    if received < expected:
        raise ApplicationError(
            f"The upload stopped after {received} of the {expected} bytes its Content-Length "
            "announced; send it again."
        )


def _new_member() -> zlib._Decompress:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def gunzip_if_needed(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Decompresses a gzip stream on the fly; other input passes through unchanged.

    Every member is read (``cat a.gz b.gz`` is one valid gzip file, and ``gzip -d`` reads both);
    zero bytes after the last are padding and ignored, as gzip does. A stream that ends inside
    a member is truncated and refused: what was decompressed is not the whole log.

    The decompressed size is bounded downstream by the intake limit, so a gzip bomb costs at most
    one chunk of memory before it is refused.
    """
    iterator = iter(chunks)
    first = next(iterator, b"")
    if not first.startswith(GZIP_MAGIC):
        yield from chain([first], iterator)
        return
    decompressor = _new_member()
    padding = False
    try:
        for data in chain([first], iterator):
            while data:
                if padding or decompressor.eof:
                    if not data.strip(b"\0"):
                        padding = True
                        break
                    if padding:
                        raise ApplicationError("The upload is not valid gzip: data after padding.")
                    decompressor = _new_member()
                out = decompressor.decompress(data, READ_SIZE)
                if out:
                    yield out
                data = (
                    decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
                )
        if not padding and not decompressor.eof:
            raise ApplicationError(
                "The upload is not valid gzip: the stream ends before its end (truncated); "
                "send it again."
            )
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:
        raise ApplicationError(f"The upload is not valid gzip: {exc}") from None
