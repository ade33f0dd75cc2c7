"""`diagnose --offline`: mask, match and remediate in this process; nothing leaves the machine."""

from __future__ import annotations

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


def _completed(
    result: DiagnosisResult, engine: Engine, counts: dict[str, int], name: str
) -> FileResult:
    """Stage 3 offline: the fix is always included on the user's own machine."""
    entry = engine.by_slug[result.failure.slug] if result.failure else None
    completed = complete_result(result, entry=entry, include_fix=True, masking=counts)
    return FileResult(**vars(completed), file=name)
