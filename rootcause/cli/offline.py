"""`diagnose --offline`: mask, match and remediate in this process; nothing leaves the machine."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TypeVar

from rootcause.cli.errors import InputError
from rootcause.cli.reading import raw_pieces
from rootcause.cli.results import FileResult
from rootcause.engine import Engine
from rootcause.masking import Masker, iter_line_chunks
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.masking.printed import mentioned_names, teaching_lines
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult


def diagnose_path(path: str, engine: Engine) -> FileResult:
    """What `diagnose --offline` computes for one file (also used by `make eval`): the engine
    reads the log as it is, and what is printed is masked (``_masked``)."""
    result, counts = _masked(engine.diagnose(iter_line_chunks(raw_pieces(path))), [path])
    return _completed(result, engine, counts, path)


def diagnose_merged(paths: list[str], engine: Engine) -> FileResult:
    sources = [(p, iter_line_chunks(raw_pieces(p))) for p in paths]
    result, counts = _masked(engine.diagnose_sources(sources), paths)
    return _completed(result, engine, counts, ",".join(paths))


_T = TypeVar("_T")

# The fields of a result that hold no text of the log: the catalogue's words and ids.
_NOT_FROM_THE_LOG = frozenset(
    [
        "slug",
        "title",
        "category",
        "confidence_level",
        "encyclopedia_url",
        "catalogue_version",
        "outcome",
    ]
)


def _masked(result: DiagnosisResult, paths: list[str]) -> tuple[DiagnosisResult, dict[str, int]]:
    """The engine's ``result`` (before the fix is added from the catalogue) with every text
    that can come from the log masked as the service masks a log, the names learned anywhere
    in the files (``rootcause.masking.printed``) included; and what was masked in it."""
    texts: list[str] = []
    _walk(result, texts.append)
    masker = Masker(analyzer=WHEN_NEEDED)
    names = mentioned_names(texts)
    for path in paths:
        for lines in teaching_lines(raw_pieces(path), names):
            masker.learn_lines(lines)
    return _walk(result, masker.mask_apart), masker.counts


def _walk(value: _T, edit: Callable[[str], object]) -> _T:
    """``value`` with ``edit`` applied to every string from the log in it (``edit``'s answer
    when it is a string, else the string as it was)."""
    if isinstance(value, str):
        out = edit(value)
        return out if isinstance(out, str) else value  # type: ignore[return-value]
    if isinstance(value, list):
        return [_walk(v, edit) for v in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: _walk(v, edit) for k, v in value.items()}  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _walk(getattr(value, f.name), edit)
            for f in dataclasses.fields(value)
            if f.name not in _NOT_FROM_THE_LOG
        }
        return dataclasses.replace(value, **changes)
    return value


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
