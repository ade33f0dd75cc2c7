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

from collections import deque
from collections.abc import Iterator
from typing import IO, cast

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler

from plumbing.problems import PayloadTooLarge

PIECE_BYTES = 1 << 20


class _Pieces:
    """The file object behind PiecesUploadedFile: the pieces, consumed as they are read."""

    def __init__(self, pieces: deque[bytes]) -> None:
        self.pieces = pieces
        self.closed = False

    def take(self) -> Iterator[bytes]:
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
        return bytes(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        # Django seeks to 0 before its own reads; pieces already read are gone.
        return 0

    def tell(self) -> int:
        return 0

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
