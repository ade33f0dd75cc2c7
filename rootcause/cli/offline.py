"""`diagnose --offline`: mask, match and remediate in this process; nothing leaves the machine."""

from __future__ import annotations

import os

from rootcause.cli.errors import InputError
from rootcause.cli.inputs import masked_chunks
from rootcause.cli.results import FileResult
from rootcause.engine import Engine
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult


def diagnose_path(path: str, engine: Engine) -> FileResult:
    """What `diagnose --offline` computes for one file (also used by `make eval`)."""
    counts: dict[str, int] = {}
    result = engine.diagnose(masked_chunks(path, counts))
    return _completed(result, engine, counts, path)


def diagnose_merged(paths: list[str], engine: Engine) -> FileResult:
    counts: dict[str, int] = {}
    sources = [(p, masked_chunks(p, counts)) for p in paths]
    result = engine.diagnose_sources(sources)
    return _completed(result, engine, counts, ",".join(paths))


def is_bundle(path: str) -> bool:
    """A directory, or an archive (.tar.gz, .tar, .zip) by its first bytes: one job's per-rank
    files. A gzipped log is a log."""
    if os.path.isdir(path):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    from rootcause.hangs.bundle import is_archive  # the hang reader only when one is given

    return is_archive(head)


def diagnose_bundle_path(path: str, engine: Engine) -> FileResult:
    """A bundle's hang verdict (rootcause.hangs), completed like any other result."""
    from rootcause.hangs import BundleError, diagnose_bundle

    try:
        result = diagnose_bundle(path)
    except BundleError as exc:
        raise InputError(str(exc) if str(exc).startswith(path) else f"{path}: {exc}") from None
    return _completed(result, engine, dict(result.masking), path)


def _completed(
    result: DiagnosisResult, engine: Engine, counts: dict[str, int], name: str
) -> FileResult:
    """Stage 3 offline: the fix is always included on the user's own machine."""
    entry = engine.by_slug.get(result.failure.slug) if result.failure else None
    completed = complete_result(result, entry=entry, include_fix=True, masking=counts)
    return FileResult(**vars(completed), file=name)
