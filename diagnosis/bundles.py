"""Bundles at intake: one job's per-rank files (logs, flight-recorder dumps, stack dumps), given
as several files of one upload or as one archive (.tar.gz, .tar, .zip).

The limits are rootcause.hangs' (`Limits`), with the service's numbers from settings; they are
checked here, in the web process, before anything is charged or staged: the sizes and count of
the files, and an archive's expansion (declared sizes first, then the bytes actually read, so a
1 GB expansion of a 1 MB archive is refused before it is held). A pickle among the files is read
with the restricted unpickler here too, so that one which builds anything but plain data is a 400
now rather than a failed diagnosis later. Nothing else reads the files before the mask stage.

A bundle is staged as one archive under the raw key, like a log: an archive as it came, several
files as an uncompressed tar written on the fly (no second copy of the files is made).
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from django.conf import settings

from plumbing.problems import ApplicationError, PayloadTooLarge
from rootcause.hangs import DEFAULT_LIMITS, BundleError, Limits, is_archive, members
from rootcause.hangs import BundleTooLarge as LimitPassed
from rootcause.hangs.safepickle import loads as safe_loads

# How much of a file tells whether it is an archive (a gzip's start expands to a tar header).
HEAD_BYTES = 1024
_BLOCK = 512
_PIECE = 1 << 20


class BundleRejected(ApplicationError):
    title = "Bundle rejected"


class BundleTooLarge(PayloadTooLarge):
    slug = "bundle-too-large"
    title = "Bundle too large"


def bundle_limits() -> Limits:
    """What one bundle may hold on this service (settings), in the library's terms."""
    expanded = settings.ROOTCAUSE_BUNDLE_MAX_BYTES
    return Limits(
        max_files=settings.ROOTCAUSE_BUNDLE_MAX_FILES,
        max_file_bytes=min(DEFAULT_LIMITS.max_file_bytes, expanded),
        max_total_bytes=expanded,
        max_archive_bytes=settings.ROOTCAUSE_MAX_LOG_BYTES,
    )


@dataclass(frozen=True)
class UploadLimits:
    """A bundle's limits as an upload meets them: what the page's pre-check holds a drop to, and
    says, before anything is sent (diagnosis/static/diagnosis/diagnose.js)."""

    max_files: int
    max_file_bytes: int
    # several files of one form, together: the upload's limit (they are staged as one tar) and
    # the bundle's expanded limit
    max_files_bytes: int
    max_archive_bytes: int
    # one archive, expanded: at most this, and at most max_ratio times its own size (1 MiB floor)
    max_expanded_bytes: int
    max_ratio: int


def upload_limits() -> UploadLimits:
    """This service's bundle limits (settings), in the terms an upload meets them."""
    limits = bundle_limits()
    return UploadLimits(
        max_files=limits.max_files,
        max_file_bytes=limits.max_file_bytes,
        max_files_bytes=min(int(settings.ROOTCAUSE_MAX_LOG_BYTES), limits.max_total_bytes),
        max_archive_bytes=limits.max_archive_bytes,
        max_expanded_bytes=limits.max_total_bytes,
        max_ratio=limits.max_ratio,
    )


def staged_limit() -> int:
    """The most a staged bundle may take: the upload's limit and a tar header per file."""
    return int(settings.ROOTCAUSE_MAX_LOG_BYTES) + _BLOCK * (
        2 * int(settings.ROOTCAUSE_BUNDLE_MAX_FILES) + 2
    )


def problem_of(exc: BundleError) -> ApplicationError:
    """The library's refusal as the API's problem: 413 for a passed limit, else 400."""
    if isinstance(exc, LimitPassed):
        return BundleTooLarge(str(exc))
    return BundleRejected(str(exc))


@dataclass(frozen=True)
class CheckedBundle:
    """A bundle that passed the limits: what to stage, and the name the history shows."""

    chunks: Iterator[bytes]
    name: str
    files: int


def checked_bundle(files: Sequence[tuple[str, bytes]]) -> CheckedBundle:
    """Checks a bundle given as (name, bytes) files: one archive, or several plain files.
    Raises BundleRejected (400) or BundleTooLarge (413)."""
    if not files:
        raise BundleRejected("The bundle has no files.")
    limits = bundle_limits()
    try:
        if len(files) == 1 and is_archive(files[0][1][:HEAD_BYTES]):
            name, archive = files[0]
            count = _check_members(members(archive, limits))
            return CheckedBundle(_pieces(archive), name, count)
        archives = [name for name, data in files if is_archive(data[:HEAD_BYTES])]
        if archives:
            raise BundleRejected(
                f"{archives[0]}: an archive among other files. Send one archive, or the "
                "files themselves."
            )
        count = _check_members(members(list(files), limits))
    except BundleError as exc:
        raise problem_of(exc) from None
    return CheckedBundle(tar_stream(files), _name_of(files), count)


def _check_members(found: Iterator[tuple[str, bytes]]) -> int:
    """Reads every member within the limits (the generator raises past one); a pickle is read
    with the restricted unpickler, which refuses anything but plain data. How many there are."""
    count = 0
    for name, data in found:
        count += 1
        if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
            try:
                safe_loads(data)
            except BundleError as exc:
                raise BundleRejected(f"{name}: {exc}") from None
    if not count:
        raise BundleRejected("The archive holds no files.")
    return count


def _name_of(files: Sequence[tuple[str, bytes]]) -> str:
    names = [name.replace("\\", "/").rsplit("/", 1)[-1] for name, _ in files]
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:3])
    return f"{len(names)} files: {shown}{', …' if len(names) > 3 else ''}"


def _pieces(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(data), _PIECE):
        yield bytes(view[start : start + _PIECE])


def tar_stream(files: Sequence[tuple[str, bytes]]) -> Iterator[bytes]:
    """The files as an uncompressed tar (PAX headers: any name), a piece at a time."""
    for name, data in files:
        info = tarfile.TarInfo(name.replace("\\", "/").lstrip("/") or "file")
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        yield from _pieces(data)
        if len(data) % _BLOCK:
            yield b"\0" * (_BLOCK - len(data) % _BLOCK)
    yield b"\0" * (2 * _BLOCK)
