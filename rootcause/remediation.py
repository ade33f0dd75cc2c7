"""Remediation lookup (stage 3): the entry's fix steps, command and verification command.

Whether fix steps are included follows the caller's trust tier. The service asks
`billing_tiers.selectors.includes_fix_steps` (the one gate); the offline CLI includes them, since it
runs on the user's own machine with the catalogue shipped in the package.
"""

from __future__ import annotations

from typing import Any

Entry = dict[str, Any]


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
