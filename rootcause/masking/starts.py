"""Where a match of a pattern scanned without start-of-match tracking starts, from its end.

Hyperscan's leftmost start of match (``HS_FLAG_SOM_LEFTMOST``) is costly for a pattern that
opens with an unbounded repetition: on issue 33's dense cluster log, ``user_at_host_*`` and
``slurm_hostlist`` took 0.34 s of the learning scan's 0.62 s (0.12 s without any start of
match). For these patterns the start follows from the end in a few C calls: the match holds
exactly one separator byte (``@``, ``[``) that its tail never holds, and before that byte
runs the leftmost stretch of the name's bytes that the pattern's first byte may start. Each
function gives, for an end Hyperscan reports, the start it would report with
``HS_FLAG_SOM_LEFTMOST`` (tests/rootcause/test_masking_starts.py compares the two on every
hit of the test logs and of random text made of the patterns' bytes).
"""

from __future__ import annotations

from collections.abc import Callable

# The start a pattern's match ending at ``end`` has in ``buf`` (``Spec.start``).
StartOf = Callable[[bytes, int], int]

_BACK = 256  # the first look back; doubled while the run goes on (exact however long)


def _table(allowed: bytes) -> bytes:
    """A translation: ``allowed`` bytes -> b"a", every other byte -> b" "."""
    return bytes(97 if c in allowed else 32 for c in range(256))


_DIGITS = b"0123456789"
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ALNUM = _LETTERS + _DIGITS
_LETTER_BYTES = frozenset(_LETTERS)
_DIGIT_BYTES = frozenset(_DIGITS)
_HOST_BYTES = frozenset(_ALNUM + b"-")  # what a host name ends with (a label's bytes)
_USER_RUN = _table(_ALNUM + b"_.-")  # [A-Za-z0-9_.\-]
_USER_FIRST = _table(_ALNUM + b"_")  # [A-Za-z0-9_]
_NODE_RUN = _table(_ALNUM + b"-")  # [A-Za-z0-9\-]
_NODE_FIRST = _table(_LETTERS)  # [A-Za-z]
_EMAIL_RUN = _table(_ALNUM + b"._%+-")  # [A-Za-z0-9._%+\-]
_DATE_BYTES = 10  # a date glued to an address: 2026-12-01
_PREFIX_RUN = _table(_ALNUM + b"_.-")  # [A-Za-z0-9._\-]
# [A-Za-z] -> b"a", the bytes of the run that are not word bytes ('.', '-') -> b".", else b" "
_PREFIX_WORDS = bytes(97 if c in _LETTERS else 46 if c in b".-" else 32 for c in range(256))


def _run_start(buf: bytes, end: int, run: bytes) -> int:
    """Where the stretch of ``run``'s bytes that ends at ``end`` begins."""
    back = _BACK
    while True:
        lo = max(0, end - back)
        gap = buf[lo:end].translate(run).rfind(b" ")
        if gap != -1:
            return lo + gap + 1
        if lo == 0:
            return 0
        back *= 2


def _first_of(buf: bytes, start: int, end: int, first: bytes) -> int:
    """The first position in [start, end) whose byte ``first`` allows (``end`` if none)."""
    i = buf[start:end].translate(first).find(b"a")
    return end if i == -1 else start + i


def user_at_host_start(buf: bytes, end: int) -> int:
    """``[A-Za-z0-9_][A-Za-z0-9_.\\-]*@[A-Za-z][A-Za-z0-9\\-]*(?:\\.[A-Za-z0-9\\-]+)*``
    ``(?:[^A-Za-z0-9\\-.]|$)``: the host ends with a label's byte, so a match ending in one
    ended at ``$``, and one ending in another byte consumed it as its terminator. Neither
    part holds an ``@``: the match's is the last before the host's end. The user is the
    run of its bytes before it, from the first that may open it."""
    host_end = end if buf[end - 1] in _HOST_BYTES else end - 1
    at = buf.rfind(b"@", 0, host_end)
    return _first_of(buf, _run_start(buf, at, _USER_RUN), at, _USER_FIRST)


def slurm_hostlist_start(buf: bytes, end: int) -> int:
    """``[A-Za-z][A-Za-z0-9\\-]*\\[\\d+(?:-\\d+)?(?:,\\d+(?:-\\d+)?)*\\]``: the match ends
    with its only ``]``, its ``[`` is the last before it, and the name is the run of its
    bytes before that, from the first letter."""
    bracket = buf.rfind(b"[", 0, end - 1)
    return _first_of(buf, _run_start(buf, bracket, _NODE_RUN), bracket, _NODE_FIRST)


def nccl_prefix_start(buf: bytes, end: int) -> int:
    """``\\b[A-Za-z][A-Za-z0-9._\\-]*:\\d+:\\d+ \\[\\d+\\]``: the match ends with its only
    ``]``; its ``[`` is the last before that, and the name ends at the second ``:`` before it
    (only digits and a blank between). The name starts at a letter at a word boundary: the
    run's first byte, or a letter after a ``.`` or ``-`` (after ``_``, a word byte, there is
    no boundary); the leftmost of those."""
    bracket = buf.rfind(b"[", 0, end - 1)
    colon = buf.rfind(b":", 0, buf.rfind(b":", 0, bracket))
    run = _run_start(buf, colon, _PREFIX_RUN)
    words = buf[run:colon].translate(_PREFIX_WORDS)
    return run if words[:1] == b"a" else run + words.find(b".a") + 1


def email_start(buf: bytes, end: int) -> int:
    """``[A-Za-z0-9._%+\\-]+@[A-Za-z0-9\\-]+(?:\\.[A-Za-z0-9\\-]+)*\\.[A-Za-z]{2,24}``
    ``(?:[^A-Za-z0-9]|$|(?:19|20)\\d\\d-[01]\\d-[0-3]\\d)``: the domain ends with a letter, so
    a match ending in a letter ended at ``$``, one ending in a digit with a date (ten bytes),
    one ending in another byte consumed it. The domain holds no ``@``: the match's is the last
    before the domain's end, and the address is the whole run of its bytes before it."""
    last = buf[end - 1]
    if last in _LETTER_BYTES:
        domain_end = end
    elif last in _DIGIT_BYTES:
        domain_end = end - _DATE_BYTES
    else:
        domain_end = end - 1
    at = buf.rfind(b"@", 0, domain_end)
    return _run_start(buf, at, _EMAIL_RUN)
