"""A bundle's hang verdict as a whole DiagnosisResult, so every consumer of today's result reads
a hang without change: the verdict is `failure.slug`, a single culprit `initiating_rank`, the
waiting ranks collateral, and the full picture in the `hang` section."""

from __future__ import annotations

from typing import Literal

from rootcause.confidence import what_would_decide
from rootcause.engine import Engine, get_engine
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


def parse_ranks(text: str) -> list[int]:
    """ "0-6, 8-15" (as the section writes ranks) -> [0, ..., 6, 8, ..., 15]."""
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


def result_for(
    section: HangSection, *, masked: dict[str, int], engine: Engine | None = None
) -> DiagnosisResult:
    """The section as a whole result; `engine` names the classes (the service's current
    catalogue; by default the one shipped in the package)."""
    engine = engine or get_engine()
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
    collateral = parse_ranks(section.collateral_ranks)
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
    source: Source,
    *,
    limits: Limits = DEFAULT_LIMITS,
    masker: Masker | None = None,
    engine: Engine | None = None,
) -> DiagnosisResult:
    """Read, mask and analyse a bundle (directory, archive path or bytes, or (name, bytes)
    pairs). Raises BundleError (400) or BundleTooLarge (413)."""
    bundle = read_bundle(source, limits=limits, masker=masker)
    return result_for(analyse(bundle, engine), masked=bundle.masked, engine=engine)


# What each rank of a rank map is: blamed, only waiting on the culprits (or, with none, simply
# running), or without any dump or stack to say where it is.
RankState = Literal["culprit", "waiting", "missing"]


def rank_states(section: HangSection) -> list[tuple[int, RankState]]:
    """Every rank of the job, in order, with its state: the rank map of the result page, the
    CLI's text and the editor's panel. A rank is missing when no stack group and no
    flight-recorder entry names it (its logs alone, or nothing, came in the bundle)."""
    culprits = {c.rank for c in section.culprits}
    seen = {c.rank for c in section.last_collectives}
    for group in section.stacks:
        seen.update(parse_ranks(group.ranks))
    states: list[tuple[int, RankState]] = []
    for rank in range(section.world_size):
        if rank in culprits:
            states.append((rank, "culprit"))
        elif rank in seen:
            states.append((rank, "waiting"))
        else:
            states.append((rank, "missing"))
    return states
