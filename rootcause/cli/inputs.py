"""What is uploaded for each log given on the command line (`reading` reads them).

`-` is standard input, a `.gz` file (or gzip on standard input) is unpacked. A file that is not a
text log (`rootcause.intake.not_a_log`) is refused before anything is sent.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import IO

from rootcause.cli.errors import InputError
from rootcause.cli.progress import size_text
from rootcause.cli.reading import (
    display_name,
    raw_pieces,
    read_stdin,
)
from rootcause.engine import Engine
from rootcause.engine.scanning import rank_from_name
from rootcause.evidence import parse_line
from rootcause.extract import EXTRACT_ABOVE, Extract, TooMuchKept, extract
from rootcause.masking import iter_line_chunks


@dataclass
class Upload:
    """What is sent for one log (or for the merged logs of one job)."""

    name: str  # the file name sent; the service masks it and shows it in the history
    body: IO[bytes]
    size: int  # bytes sent
    note: str = ""  # what was kept of a big log, for the user
    # merged logs: (file, first line in the upload, lines), to give evidence its own file back
    parts: list[tuple[str, int, int]] = field(default_factory=list)


def prepare_bundle(path: str) -> Upload:
    """What to upload for a bundle (rootcause.hangs: one job's per-rank files): an archive as it
    is, a directory packed into a .tar.gz here, in memory, within the bundle limits. The
    service masks every file before anything reads it, as it does a log."""
    from rootcause.hangs import BundleError, members

    if not os.path.isdir(path):
        body, size = _whole(path)
        return Upload(os.path.basename(path.rstrip("/")) or path, body, size)
    out = io.BytesIO()
    count = 0
    try:
        with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar:
            for name, data in members(path):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
                count += 1
    except BundleError as exc:
        raise InputError(f"{path}: {exc}") from None
    size = out.tell()
    out.seek(0)
    name = os.path.basename(os.path.normpath(path)) or "bundle"
    note = f"{path}: a bundle of {count} files, sent as {name}.tar.gz ({size_text(size)})"
    return Upload(f"{name}.tar.gz", out, size, note=note)


def upload_name(path: str) -> str:
    return "stdin" if path == "-" else os.path.basename(path.removesuffix(".gz")) or path


def _close(pieces: Iterator[bytes]) -> None:
    close = getattr(pieces, "close", None)
    if close is not None:
        close()


def _read_ahead(pieces: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes and more if a piece runs over; True when the input ended there."""
    head = bytearray()
    for piece in pieces:
        head += piece
        if len(head) > limit:
            return bytes(head), False
    return bytes(head), True


def _gzipped(texts: Iterable[str]) -> tuple[IO[bytes], int]:
    """The text gzip-compressed in memory (the service unpacks it): empty lines cost nothing."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as packed:
        for text in texts:
            packed.write(text.encode("utf-8", "surrogatepass"))
    size = out.tell()
    out.seek(0)
    return out, size


def _whole(path: str) -> tuple[IO[bytes], int]:
    """The file as it is on disk (a `.gz` stays packed: the service unpacks it)."""
    if path == "-":
        data = read_stdin()
        return io.BytesIO(data), len(data)
    try:
        stream = open(path, "rb")  # noqa: SIM115  (the upload closes it)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    return stream, os.fstat(stream.fileno()).st_size


def prepare(
    path: str,
    *,
    engine: Callable[[], Engine],
    full: bool,
    on_extract: Callable[[int | None], Callable[[int], None]] | None = None,
) -> Upload:
    """What to upload for one log: the whole log, or for a big one its evidence (extract.py).

    `on_extract` is told when an extraction starts (with the file's size when known) and
    returns the callback that follows it.
    """
    name = display_name(path)
    pieces = raw_pieces(path)
    head, ended = _read_ahead(pieces, EXTRACT_ABOVE)
    if ended:
        return Upload(upload_name(path), io.BytesIO(head), len(head))
    if full:
        _close(pieces)
        body, size = _whole(path)
        return Upload(upload_name(path), body, size)
    progress = None
    if on_extract is not None:
        plain = path != "-" and not path.endswith(".gz")
        progress = on_extract(os.path.getsize(path) if plain else None)
    try:
        found = extract(chain([head], pieces), engine(), progress)
    except TooMuchKept:
        found = None
    if found is None or not found.worth_it:
        body, size = _whole(path)
        return Upload(
            upload_name(path), body, size, note=f"{name}: most of it is evidence; sending it whole"
        )
    body, size = _gzipped(found.text())
    return Upload(
        upload_name(path),
        body,
        size,
        note=(
            f"{name}: {size_text(found.size)}, {found.lines:,} lines; sending the evidence "
            f"only: {size_text(found.kept_bytes)} in {len(found.kept):,} lines (tracebacks, "
            "error windows, each rank's last lines). --full sends everything"
        ),
    )


def _lines_of(path: str, *, engine: Callable[[], Engine], full: bool) -> Extract:
    """A log as lines: all of them for a small log or with --full, the evidence of a big one."""
    pieces = raw_pieces(path)
    head, ended = _read_ahead(pieces, EXTRACT_ABOVE)
    if ended or full:
        whole = Extract()
        rest: Iterable[bytes] = [] if ended else pieces
        for chunk in iter_line_chunks(chain([head], rest)):
            for line in chunk.removesuffix("\n").split("\n"):
                whole.kept[whole.lines] = line
                whole.lines += 1
            whole.size += len(chunk)
        whole.kept_bytes = whole.size
        return whole
    try:
        return extract(chain([head], pieces), engine())
    except TooMuchKept:
        return _lines_of(path, engine=engine, full=True)


def _rank_prefixer(rank: int) -> Callable[[str], str]:
    prefix = f"[rank{rank}]: "

    def prefixed(line: str) -> str:
        if not line.strip() or parse_line(line).rank is not None:
            return line
        return prefix + line

    return prefixed


def prepare_merged(paths: list[str], *, engine: Callable[[], Engine], full: bool) -> Upload:
    """The logs of one job's ranks as one upload, for a service that takes one log per diagnosis.

    As the engine does with merged files, a line that carries no rank takes its file's rank (the
    number in the file's name, else its position), here by a `[rankN]:` prefix; the parts let the
    client give each evidence line its own file and line number back.
    """
    logs = [_lines_of(p, engine=engine, full=full) for p in paths]
    parts: list[tuple[str, int, int]] = []
    start = 0
    for path, log in zip(paths, logs, strict=True):
        parts.append((path, start, log.lines))
        start += log.lines

    def texts() -> Iterator[str]:
        for index, (path, log) in enumerate(zip(paths, logs, strict=True)):
            yield from log.text(_rank_prefixer(rank_from_name(display_name(path), index)))

    body, size = _gzipped(texts())
    total = sum(log.size for log in logs)
    kept = sum(log.kept_bytes for log in logs)
    note = ""
    if kept < total:
        note = (
            f"{len(paths)} logs, {size_text(total)}; sending the evidence only: {size_text(kept)} "
            "(tracebacks, error windows, each rank's last lines). --full sends everything"
        )
    return Upload("+".join(upload_name(p) for p in paths)[:200], body, size, note=note, parts=parts)
