"""A bundle's hang verdict as a whole DiagnosisResult, so every consumer of today's result reads
a hang without change: the verdict is `failure.slug`, a single culprit `initiating_rank`, the
waiting ranks collateral, and the full picture in the `hang` section."""

from __future__ import annotations

from rootcause.confidence import what_would_decide
from rootcause.engine import get_engine
from rootcause.hangs.analysis import HEALTHY, analyse
from rootcause.hangs.bundle import DEFAULT_LIMITS, Limits, Source, read_bundle
from rootcause.masking import Masker
from rootcause.result import (
    CollateralFailure,
    DiagnosisResult,
    EvidenceLine,
    HangSection,
    RankRow,
    failure_of,
)

WAITED = "gloo-timeout"  # the class of a rank that only waited on the culprit


def _ranks(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _what_would_decide(section: HangSection, check: str | None) -> str:
    """The dumps the bundle lacks decide first (a rank without its dumps cannot be judged);
    else the class's first check."""
    if section.missing:
        return "the dumps the bundle lacks (" + "; ".join(section.missing[:3]) + ")"
    return what_would_decide(check=check)


def result_for(section: HangSection, *, masked: dict[str, int]) -> DiagnosisResult:
    engine = get_engine()
    version = engine.version
    if section.verdict == HEALTHY:
        return DiagnosisResult(
            outcome="no_match",
            failure=None,
            root_cause=None,
            initiating_rank=None,
            ranks=[],
            collateral=[],
            evidence=[],
            missing_facts=section.missing,
            encyclopedia_url=None,
            catalogue_version=version,
            masking=masked,
            hang=section,
        )
    entry = engine.by_slug.get(section.verdict)
    culprits = sorted(section.culprits, key=lambda c: (-c.confidence, c.rank))
    single = culprits[0].rank if len(culprits) == 1 else None
    collateral = _ranks(section.collateral_ranks)
    # The grouped stacks are the evidence a reader of today's result sees first.
    evidence = [
        EvidenceLine(
            file="stacks",
            line=i,
            text=f"ranks {g.ranks}: in `{g.frame}` at {g.where} ({g.meaning_text})",
        )
        for i, g in enumerate(section.stacks[:6], 1)
    ]
    return DiagnosisResult(
        outcome="diagnosed",
        failure=failure_of(
            slug=section.verdict,
            title=entry.title if entry else section.verdict,
            category=entry.category if entry else "distributed",
            confidence=max((c.confidence for c in culprits), default=0.5),
            confirm=_what_would_decide(
                section, entry.checklist[0] if entry and entry.checklist else None
            ),
        ),
        root_cause=section.summary,
        initiating_rank=single,
        ranks=[
            RankRow(rank=c.rank, slug=section.verdict, first_error_line=0, collateral=False)
            for c in culprits
        ]
        + [RankRow(rank=r, slug=WAITED, first_error_line=0, collateral=True) for r in collateral],
        collateral=[CollateralFailure(slug=WAITED, ranks=collateral)] if collateral else [],
        evidence=evidence,
        missing_facts=section.missing,
        encyclopedia_url=f"/encyclopedia/{section.verdict}/" if entry else None,
        catalogue_version=version,
        masking=masked,
        hang=section,
    )


def diagnose_bundle(
    source: Source, *, limits: Limits = DEFAULT_LIMITS, masker: Masker | None = None
) -> DiagnosisResult:
    """Read, mask and analyse a bundle (directory, archive path or bytes, or (name, bytes)
    pairs). Raises BundleError (400) or BundleTooLarge (413)."""
    bundle = read_bundle(source, limits=limits, masker=masker)
    return result_for(analyse(bundle), masked=bundle.masked)
