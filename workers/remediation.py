"""Remediation lookup: the entry's fix steps, command and verification command.

Whether fix steps are shown follows the caller's trust tier; the gate lives here, in
`fixes_included`, so that the tier rules arrive in one place.
"""

from __future__ import annotations

from typing import Any

Entry = dict[str, Any]


def fixes_included(tier: str | None) -> bool:
    """Every tier sees fixes until the tier rules land (DESIGN.md: anonymous will not)."""
    return True


def remediation_for(entry: Entry, *, include_fix: bool) -> dict[str, Any] | None:
    if not include_fix:
        return None
    fix = entry.get("fix") or {}
    verification = entry.get("verification") or {}
    return {
        "steps": list(fix.get("steps", [])),
        "command": fix.get("command", ""),
        "verification_command": verification.get("command", ""),
        "verification_expect": verification.get("expect", ""),
    }
