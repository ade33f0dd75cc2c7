"""Reading the logs given on the command line: files, `.gz` files and standard input.

`-` is standard input, a `.gz` file (or gzip on standard input) is unpacked. A file that is not a
text log (`rootcause.intake.not_a_log`) is refused before anything is read further. This is all
`rootcause mask` needs: the upload's preparation (`inputs`) and the engine are not imported.
"""

from __future__ import annotations

import codecs
import gc
import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from functools import partial
from typing import BinaryIO, cast

from rootcause.cli.errors import ExitCode, InputError
from rootcause.intake import not_a_log
from rootcause.masking import Masker, mask_log
from rootcause.masking.masker import WHEN_NEEDED, mask_log_utf8

PIECE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _refuse_if_not_a_log(head: bytes, name: str) -> None:
    reason = not_a_log(head)
    if reason:
        raise InputError(f"{name}: {reason}")


_stdin_data: bytes | None = None


def read_stdin() -> bytes:
    """Standard input, read once (a log given as `-` may be read twice: extraction, upload)."""
    global _stdin_data  # one standard input per process
    if _stdin_data is None:
        data = sys.stdin.buffer.read()
        if data.startswith(GZIP_MAGIC):
            try:
                data = gzip.decompress(data)
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise InputError(f"<stdin>: cannot be read ({exc})") from None
        _stdin_data = data
    return _stdin_data


def forget_stdin() -> None:
    """For tests, which feed standard input once per invocation."""
    global _stdin_data
    _stdin_data = None


def raw_pieces(path: str) -> Iterator[bytes]:
    """The file's bytes in pieces; InputError is raised before the first piece is yielded."""
    name = display_name(path)
    if path == "-":
        data = read_stdin()
        _refuse_if_not_a_log(data[:PIECE], name)
        return iter([data] if data else [])
    try:
        if path.endswith(".gz"):
            stream: io.BufferedIOBase = gzip.open(path, "rb")  # noqa: SIM115
        else:
            # closed by _rest when the pieces have been read
            stream = open(path, "rb")  # noqa: SIM115
        first = stream.read(PIECE)
    except FileNotFoundError as exc:
        raise InputError(f"{name}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{name}: is a directory") from exc
    except PermissionError as exc:
        raise InputError(f"{name}: permission denied") from exc
    except (gzip.BadGzipFile, EOFError, OSError, zlib.error) as exc:
        raise InputError(f"{name}: cannot be read ({exc})") from exc
    _refuse_if_not_a_log(first, name)
    return _rest(stream, first, name)


def _rest(stream: io.BufferedIOBase, first: bytes, name: str) -> Iterator[bytes]:
    try:
        if first:
            yield first
        while True:
            try:
                piece = stream.read(PIECE)
            except (gzip.BadGzipFile, EOFError, OSError, zlib.error) as exc:
                raise InputError(f"{name}: cannot be read ({exc})") from exc
            if not piece:
                return
            yield piece
    finally:
        stream.close()


def masked_chunks(path: str, counts: dict[str, int]) -> Iterator[str]:
    """The log's masked text in line-aligned chunks, as the service masks it (two passes: the
    names it learns anywhere are masked everywhere); `counts` follows the masking counts."""
    masker = Masker(analyzer=WHEN_NEEDED)
    for chunk in mask_log(lambda: raw_pieces(path), masker):
        yield chunk
        counts.clear()
        counts.update(masker.counts)


def _utf8_stdout() -> BinaryIO | None:
    """Standard output's bytes, where writing UTF-8 there is what writing text does (a UTF-8
    encoding, no line-ending translation); None elsewhere."""
    buffer = getattr(sys.stdout, "buffer", None)
    encoding = getattr(sys.stdout, "encoding", None)
    if buffer is None or not encoding or os.linesep != "\n":
        return None
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return None
    return cast("BinaryIO", buffer) if utf8 else None


def mask_files(files: list[str]) -> int:
    """`rootcause mask FILE...`: each file's masked text on standard output; the exit code
    (2 when a file could not be read, after the others)."""
    forget_stdin()
    failed = False
    # The cyclic garbage collector off while masking: it walked the masker's hundreds of
    # thousands of tuples again and again, and masking makes next to no cycles (24 objects
    # left unreachable by issue 33's 20 MB dense log); what it would have found is collected
    # when it is on again.
    collecting = gc.isenabled()
    gc.disable()
    out = _utf8_stdout()
    try:
        for path in files:
            try:
                if out is None:
                    for chunk in masked_chunks(path, {}):
                        sys.stdout.write(chunk)
                else:
                    # the masked bytes as they are: the text they encode, UTF-8 encoded
                    sys.stdout.flush()
                    masker = Masker(analyzer=WHEN_NEEDED)
                    for piece in mask_log_utf8(partial(raw_pieces, path), masker):
                        out.write(piece)
                    out.flush()
            except InputError as exc:
                import typer  # its echo, as every other message of the command (only on an error)

                typer.echo(f"error: {exc}", err=True)
                failed = True
    finally:
        if collecting:
            gc.enable()
    sys.stdout.flush()
    return ExitCode.USAGE if failed else 0
