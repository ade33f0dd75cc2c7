from __future__ import annotations

from accounts.models import Organization


def includes_fix_steps(organization: Organization) -> bool:
    """The one gate on fix steps and commands in results.

    Every tier that exists today includes them; the trust-tier issue decides per tier here.
    """
    return True
