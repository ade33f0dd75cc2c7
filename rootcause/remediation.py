"""Remediation (stage 3): the entry's fix steps, command and verification command.

Whether fix steps are included follows the caller's trust tier. The service asks
`billing_tiers.selectors.includes_fix_steps` (the one gate); the offline CLI includes them, since it
runs on the user's own machine with the catalogue shipped in the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from msgspec import UNSET

from rootcause.catalogue import Entry
from rootcause.commands import fix_command, verification_command
from rootcause.result import DiagnosisResult, Remediation


def remediation_for(
    entry: Entry, *, include_fix: bool, result: DiagnosisResult | None = None
) -> Remediation | None:
    """The entry's fix; with the result, its commands are written for that log (the launcher,
    script and sizes it shows, placeholders for what it does not: rootcause/commands.py)."""
    if not include_fix:
        return None
    launch = result.launch if result is not None and result.launch else None
    evidence = result.evidence if result is not None else []
    return Remediation(
        steps=list(entry.fix.steps),
        command=fix_command(entry.fix.command, slug=entry.slug, launch=launch, evidence=evidence),
        verification_command=verification_command(
            entry.verification.command, launch=launch, evidence=evidence
        ),
        verification_expect=entry.verification.expect,
    )


def complete_result(
    result: DiagnosisResult,
    *,
    entry: Entry | None,
    include_fix: bool,
    masking: Mapping[str, int],
) -> DiagnosisResult:
    """Stage 3: the result with the masking counts and, when the tier includes fixes, the fix of
    the diagnosed entry (`entry` is None for no_match, or when the catalogue lost the entry)."""
    remediation = remediation_for(entry, include_fix=include_fix, result=result) if entry else None
    return replace(result, remediation=remediation or UNSET, masking=dict(masking))
