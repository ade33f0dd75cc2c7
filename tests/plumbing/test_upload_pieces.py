"""An upload held as pieces (plumbing/uploads.py) gives back every byte, also after a peek at its
first bytes and a seek(0), as the intake does to tell an archive from a log."""

from __future__ import annotations

import io
from collections import deque

import pytest

from plumbing.uploads import PIECE_BYTES, REWIND_BYTES, PiecesUploadedFile


def _upload(data: bytes) -> PiecesUploadedFile:
    pieces = deque(data[i : i + PIECE_BYTES] for i in range(0, len(data), PIECE_BYTES))
    return PiecesUploadedFile(pieces, "train.log", "text/plain", len(data), None)


def test_a_peek_then_seek_zero_loses_nothing():
    data = bytes(range(256)) * 9000  # over two pieces
    upload = _upload(data)

    assert upload.read(1024) == data[:1024]
    upload.seek(0)

    assert b"".join(upload.chunks()) == data


def test_reading_whole_after_a_peek_gives_every_byte():
    data = b"x" * 5000 + b"y" * (PIECE_BYTES + 10)
    upload = _upload(data)
    upload.read(512)
    upload.seek(0)

    assert upload.read() == data


def test_a_file_read_past_the_peek_cannot_be_rewound():
    upload = _upload(b"z" * (REWIND_BYTES + 10))
    upload.read(REWIND_BYTES + 1)

    with pytest.raises(io.UnsupportedOperation):
        upload.seek(0)
