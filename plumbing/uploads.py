"""A form's uploaded file held in memory once, as 1 MiB pieces given up as they are read.

Django's MemoryFileUploadHandler writes the file into a BytesIO and `chunks()` then yields it
whole: a second copy of a 100 MB log, and the intake's checks of that one chunk made more (a
100 MB multipart submission took a web process from 171 to 657 MB). Here the file is a list of
pieces of at most PIECE_BYTES, and `chunks()` hands each over and drops it, so the staging store
receives the log a piece at a time while the memory it held is freed. A raw log never reaches a
disk: there is no temporary-file handler (settings.FILE_UPLOAD_HANDLERS).

Such a file is read once, by `chunks()` or `read()`, as every caller of the application does
(diagnosis/api.py, diagnosis/views.py).
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Iterator
from typing import IO, cast

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler

from plumbing.problems import PayloadTooLarge

PIECE_BYTES = 1 << 20
# How much of a file's start a first read may take and still give back (a peek at its kind).
REWIND_BYTES = 64 << 10


class _Pieces:
    """The file object behind PiecesUploadedFile: the pieces, consumed as they are read. What a
    first `read(n)` took (a peek at the file's first bytes, up to REWIND_BYTES) is kept, so that
    `seek(0)` puts it back; past that, or once `chunks()` began, the file cannot be rewound."""

    def __init__(self, pieces: deque[bytes]) -> None:
        self.pieces = pieces
        self.closed = False
        self._given: list[bytes] | None = []  # None: read past what can be rewound
        self._given_bytes = 0

    def take(self) -> Iterator[bytes]:
        self._given = None
        while self.pieces:
            yield self.pieces.popleft()

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(self.take())
        out = bytearray()
        while self.pieces and len(out) < size:
            piece = self.pieces.popleft()
            wanted = size - len(out)
            if len(piece) > wanted:
                self.pieces.appendleft(piece[wanted:])
                piece = piece[:wanted]
            out += piece
        data = bytes(out)
        if self._given is not None and self._given_bytes + len(data) <= REWIND_BYTES:
            self._given.append(data)
            self._given_bytes += len(data)
        else:
            self._given = None
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        if (offset, whence) != (0, 0) or self._given is None:
            raise io.UnsupportedOperation("an upload read in pieces rewinds only a first peek")
        for data in reversed(self._given):
            self.pieces.appendleft(data)
        self._given, self._given_bytes = [], 0
        return 0

    def tell(self) -> int:
        if self._given is None:
            raise io.UnsupportedOperation("an upload read in pieces tells only a first peek")
        return self._given_bytes

    def close(self) -> None:
        self.pieces.clear()
        self.closed = True


class PiecesUploadedFile(UploadedFile):
    def __init__(
        self,
        pieces: deque[bytes],
        name: str | None,
        content_type: str | None,
        size: int,
        charset: str | None,
        content_type_extra: dict[str, bytes] | None = None,
    ) -> None:
        # A file object as far as Django reads it here: read, seek, tell, close.
        file = cast(IO[bytes], _Pieces(pieces))
        super().__init__(file, name, content_type, size, charset, content_type_extra)

    def chunks(self, chunk_size: int | None = None) -> Iterator[bytes]:
        pieces = cast(_Pieces, self.file)
        return pieces.take()

    def multiple_chunks(self, chunk_size: int | None = None) -> bool:
        return True


class PiecesUploadHandler(FileUploadHandler):
    """Every file of a form, in memory, up to FILE_UPLOAD_MAX_MEMORY_SIZE (the upload limit
    bounds the request before that, and plumbing/bodies.py how many large ones at once)."""

    def new_file(self, *args: object, **kwargs: object) -> None:
        super().new_file(*args, **kwargs)  # type: ignore[arg-type]  # Django's own signature
        self.pieces: deque[bytes] = deque()
        self.buffer = bytearray()
        self.size = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.buffer += raw_data
        self.size += len(raw_data)
        if self.size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE:
            raise PayloadTooLarge(
                f"The file is larger than the limit of {settings.ROOTCAUSE_MAX_LOG_BYTES} bytes."
            )
        if len(self.buffer) >= PIECE_BYTES:
            self.pieces.append(bytes(self.buffer))
            self.buffer.clear()
        return None  # taken: no later handler sees it

    def file_complete(self, file_size: int) -> PiecesUploadedFile:
        if self.buffer:
            self.pieces.append(bytes(self.buffer))
            self.buffer.clear()
        return PiecesUploadedFile(
            self.pieces,
            self.file_name,
            self.content_type,
            self.size,
            self.charset,
            self.content_type_extra,
        )
