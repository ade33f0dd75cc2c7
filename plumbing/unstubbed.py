"""One loosely typed door to the private helpers of libraries whose type stubs leave them out.

Django's cache client and kombu's Redis channel are extended here (plumbing/cache.py,
plumbing/broker.py) through methods their stubs do not declare; each read goes through this
function, so the loose typing is in one place and each caller says what it reaches for.
"""

from __future__ import annotations

from typing import Any


def unstubbed(obj: object) -> Any:  # private helpers are not in their libraries' type stubs
    """`obj` unchanged, typed loosely so that its private helpers can be named."""
    return obj
