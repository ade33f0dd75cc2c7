"""Read a bundle (one job's per-rank files) from a directory, a .tar(.gz), a .zip or a list of
files, within limits, and hand each file on masked and recognised by its content.

Limits are checked before anything is expanded: a directory's sizes from `stat`, a zip's from its
central directory, a gzip's from its trailer (ISIZE); and, because an archive can lie about
sizes, the bytes actually read are counted and reading stops the moment a limit is crossed, so a
1 GB expansion of a 1 MB archive is never held. Nothing is written to disk: member paths are
names only, so `../` in an archive has nowhere to go.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias

from rootcause.hangs import parsers
from rootcause.hangs.errors import BundleError, BundleTooLarge
from rootcause.masking import Masker

# What a bundle can be given as: a directory or an archive's path, an archive's bytes, or the
# (name, bytes) pairs of its files.
Source: TypeAlias = "str | Path | bytes | bytearray | Iterable[tuple[str, bytes]]"


@dataclass(frozen=True)
class Limits:
    """What one bundle may hold; the defaults fit a 2,048-rank job's logs, dumps and stacks."""

    max_files: int = 20_000
    max_file_bytes: int = 64 << 20
    max_total_bytes: int = 512 << 20
    max_archive_bytes: int = 256 << 20  # the archive itself, compressed
    max_ratio: int = 200  # expanded bytes per compressed byte, for an archive of any size


DEFAULT_LIMITS = Limits()


@dataclass
class Bundle:
    """The files of one job, masked and recognised; what was skipped, and why."""

    files: list[parsers.Parsed] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    masked: dict[str, int] = field(default_factory=dict)


class _Budget:
    def __init__(self, limits: Limits, compressed: int | None = None) -> None:
        self.limits = limits
        self.total = 0
        self.count = 0
        self.cap = limits.max_total_bytes
        if compressed is not None:
            self.cap = min(self.cap, max(compressed * limits.max_ratio, 1 << 20))

    def admit(self, name: str, declared: int) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise BundleTooLarge(f"more than {self.limits.max_files} files in the bundle")
        if declared > self.limits.max_file_bytes:
            raise BundleTooLarge(
                f"{name}: {declared} bytes, over the limit of {self.limits.max_file_bytes} a file"
            )
        if self.total + declared > self.cap:
            raise BundleTooLarge(
                f"the bundle expands to more than {self.cap} bytes (at {name}); refused "
                "before expanding it"
            )
        self.total += declared

    def read(self, name: str, stream: IO[bytes], declared: int) -> bytes:
        # Never more than declared + 1 bytes: a member that lies about its size is caught here.
        data: bytes = stream.read(declared + 1)
        if len(data) > declared:
            raise BundleTooLarge(f"{name}: larger than its archive header says; refused")
        return data


def _members_of_dir(root: Path, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    paths = []
    for dirpath, _dirs, names in os.walk(root):
        for n in sorted(names):
            p = Path(dirpath, n)
            if p.is_symlink() or not p.is_file():
                continue
            paths.append(p)
    sized = [(p, p.stat().st_size) for p in sorted(paths)]
    for p, size in sized:  # every size admitted before any file is read
        budget.admit(str(p.relative_to(root)), size)
    for p, size in sized:
        with open(p, "rb") as f:
            yield str(p.relative_to(root)), budget.read(p.name, f, size)


def _gzip_isize(data: bytes) -> int:
    return int(struct.unpack("<I", data[-4:])[0]) if len(data) >= 18 else 0


def _members_of_tar(data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    if data[:2] == b"\x1f\x8b" and _gzip_isize(data) > budget.cap:
        raise BundleTooLarge(
            f"the archive declares {_gzip_isize(data)} bytes expanded, over the limit of "
            f"{budget.cap}; refused before expanding it"
        )
    # a BytesIO, or the counting reader over gzip: tarfile reads either as its file object
    raw: Any = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        raw = _CountingReader(gzip.GzipFile(fileobj=raw), budget.cap + (1 << 20))
    try:
        with tarfile.open(fileobj=raw, mode="r|") as tar:
            for member in tar:
                if not member.isreg():
                    continue  # directories, links, devices: nothing to read
                budget.admit(member.name, member.size)
                stream = tar.extractfile(member)
                if stream is not None:
                    yield member.name, budget.read(member.name, stream, member.size)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BundleError(f"not a readable tar archive: {exc}") from None


class _CountingReader:
    """A stream that refuses to give more than `cap` bytes in all: the gzip bomb guard, for a
    trailer that lies (multi-member gzip, a forged ISIZE)."""

    def __init__(self, inner: gzip.GzipFile, cap: int) -> None:
        self.inner, self.cap, self.seen = inner, cap, 0

    def read(self, n: int = -1) -> bytes:
        data: bytes = self.inner.read(n if n >= 0 else self.cap - self.seen + 1)
        self.seen += len(data)
        if self.seen > self.cap:
            raise BundleTooLarge(
                f"the archive expands to more than {self.cap} bytes; refused while expanding"
            )
        return data


def _members_of_zip(data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise BundleError(f"not a readable zip archive: {exc}") from None
    infos = [i for i in archive.infolist() if not i.is_dir()]
    for info in infos:  # the central directory's sizes, all admitted before anything expands
        budget.admit(info.filename, info.file_size)
    for info in infos:
        try:
            with archive.open(info) as stream:
                yield info.filename, budget.read(info.filename, stream, info.file_size)
        except (zipfile.BadZipFile, OSError, NotImplementedError, zlib.error) as exc:
            raise BundleError(f"{info.filename}: unreadable zip member: {exc}") from None


def _is_tar(data: bytes) -> bool:
    return len(data) > 262 and data[257:262] == b"ustar"


def is_archive(head: bytes) -> bool:
    """Whether a file whose first bytes (512 or more) are `head` is a bundle's archive: a zip, a
    tar, or a gzipped tar (a gzipped log is a log). Only the start of the gzip is expanded."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return True
    if head.startswith(b"\x1f\x8b"):
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 512)
        except zlib.error:
            return False
        return _is_tar(inner)
    return _is_tar(head)


def members(source: Source, limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every file of the bundle, within the limits.

    `source`: a directory, an archive's path, an archive's bytes, or (name, bytes) pairs.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            found = False
            for member in _members_of_dir(path, _Budget(limits)):
                found = True
                yield member
            if not found:
                raise BundleError(f"{path}: is a directory with no files in it")
            return
        if not path.is_file():
            raise BundleError(f"{path}: no such file or directory")
        size = path.stat().st_size
        if size > limits.max_archive_bytes:
            raise BundleTooLarge(f"{path.name}: {size} bytes, over {limits.max_archive_bytes}")
        source = path.read_bytes()
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
        if len(data) > limits.max_archive_bytes:
            raise BundleTooLarge(f"the archive is over {limits.max_archive_bytes} bytes")
        budget = _Budget(limits, compressed=len(data))
        if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
            yield from _members_of_zip(data, budget)
        elif data[:2] == b"\x1f\x8b" or _is_tar(data):
            yield from _members_of_tar(data, budget)
        else:
            raise BundleError("not a bundle: expected a directory, a .tar.gz, a .tar or a .zip")
        return
    budget = _Budget(limits)
    pairs = list(source)
    for name, data in pairs:
        budget.admit(name, len(data))
    yield from pairs


def read_bundle(
    source: Source,
    *,
    limits: Limits = DEFAULT_LIMITS,
    masker: Masker | None = None,
    learn: bool = False,
) -> Bundle:
    """Every file of the bundle masked (text, or each string of a structured dump) and parsed.

    With `learn`, a first pass over every text file learns the user and host names (as
    `mask_log` does for one log), so that a host named by one rank's NCCL prefix is masked in
    every other file too, before and after the line that names it; the service masks so.
    Files nobody recognises are listed in `skipped`; a refused pickle or a broken archive
    raises BundleError, a passed limit BundleTooLarge.
    """
    masker = masker if masker is not None else Masker(analyzer=None)
    if learn:
        if not isinstance(source, (str, Path, bytes, bytearray)):
            source = list(source)  # read twice
        for _name, data in members(source, limits):
            if not data.startswith(b"\x80"):  # a pickle's strings are masked one by one
                for chunk in _chunks(data.decode("utf-8", errors="replace")):
                    masker.learn(chunk)
    bundle = Bundle()
    cache = _MaskCache(masker)  # one per bundle: every rank's dump repeats the same strings
    for raw_name, data in members(source, limits):
        name = cache.string(raw_name)  # a path may name a user or a host, and is shown
        parsed = parsers.parse_file(name, data, cache)
        if parsed is None:
            bundle.skipped.append(f"{name}: not a log, flight-recorder dump or stack dump")
            continue
        bundle.files.append(parsed)
    bundle.masked = dict(masker.counts)
    return bundle


class _MaskCache:
    """The masker, with each distinct string masked once: a flight-recorder dump repeats the
    same frames and names thousands of times."""

    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self.seen: dict[str, str] = {}

    def text(self, text: str) -> str:
        return "".join(self.masker.mask(c) for c in _chunks(text))

    def string(self, value: str) -> str:
        got = self.seen.get(value)
        if got is None:
            got = self.masker.mask(value) if _maskable(value) else value
            self.seen[value] = got
        return got


def _maskable(value: str) -> bool:
    # Op names, dtypes and state words cannot hold a secret; skipping them keeps big dumps fast.
    return not (
        value.isascii()
        and value.replace("_", "").replace(":", "").isalnum()
        and len(value) < 24
        and not any(c.isdigit() for c in value)
    )


def _chunks(text: str, size: int = 1 << 20) -> Iterable[str]:
    from rootcause.masking import iter_line_chunks

    return iter_line_chunks([text.encode()], size) if len(text) > size else [text]
