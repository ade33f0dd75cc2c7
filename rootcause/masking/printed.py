"""Masking only what is printed of a log read raw (``diagnose --offline``).

Offline nothing leaves the machine, so the engine may read the log as it is; what must be
masked is what is printed or written: the evidence, the root cause, the commands. Masked on its
own, a printed line would miss the names the log teaches elsewhere (``gpu-node-17`` named by an
NCCL prefix on line 900, a bare mention on line 3). The masking pass learns them from the whole
log; here only the lines that could teach a name the printed text mentions are read for it:

- a learned name is a run of ASCII letters, digits, '.', '-' and '_' of at least four bytes,
  and a mention of it is bounded by other bytes, so it is a sequence of whole atoms (maximal
  runs of letters and digits) of the printed text, separators included;
- it is learned (``Masker._learn``) from a value that holds it as it is, lower-cased, or with
  '.' or '_' where the mention has '-' (a user's dashed name in a Kubernetes pod's);

so every line a mentioned name can be learned from holds one of those sequences, caseless,
with any of '-', '.', '_' for a separator. One Hyperscan scan of the log finds those lines and
the learning patterns read them (without the density guard: they are few, and a guard that
thinned them would learn less than the whole pass does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import hyperscan

from rootcause.masking.scanner import Database

_RUN = re.compile(rb"[a-z0-9._-]+")
_ATOM = re.compile(rb"[a-z0-9]+")
# A learned name is at least this long (masker._learnable).
_MIN_NAME = 4
# Names of more atoms than this are not looked for (ip-10-0-12-34 is five).
_MAX_ATOMS = 16
_SEPARATOR = b"[-._]"


def mentioned_names(texts: Iterable[str]) -> set[bytes]:
    """Every sequence of whole atoms in ``texts`` that a learned name could be, lower-cased."""
    names: set[bytes] = set()
    for text in texts:
        for run in _RUN.findall(text.lower().encode("utf-8", "surrogatepass")):
            atoms = [m.span() for m in _ATOM.finditer(run)]
            for i, (start, _) in enumerate(atoms):
                for _, end in atoms[i : i + _MAX_ATOMS]:
                    if end - start >= _MIN_NAME:
                        names.add(run[start:end])
    return names


def _pattern(name: bytes) -> bytes:
    return b"".join(_SEPARATOR if c in b"-._" else re.escape(bytes((c,))) for c in name)


def teaching_lines(pieces: Iterable[bytes], names: set[bytes]) -> bytes:
    """The distinct lines of the log (``pieces``: its bytes in order) that hold one of
    ``names`` as ``mentioned_names`` gives them, each ending with a line break."""
    if not names:
        return b""
    db = Database([_pattern(n) for n in sorted(names)], [hyperscan.HS_FLAG_CASELESS] * len(names))
    lines: dict[bytes, None] = {}  # in the log's order, once each
    carry = b""
    for piece in pieces:
        buf = carry + piece
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        _collect(db, buf[:cut], lines)
    if carry:
        _collect(db, carry + b"\n", lines)
    return b"".join(lines)


def _collect(db: Database, buf: bytes, lines: dict[bytes, None]) -> None:
    """Add the lines of ``buf`` (whole lines) where ``db`` matches."""
    line_end = -1
    for end in sorted(end for _, _, end in db.scan(buf)):
        if end <= line_end:
            continue  # in the line just taken
        start = buf.rfind(b"\n", 0, max(0, end - 1)) + 1
        line_end = buf.find(b"\n", end - 1) + 1
        lines.setdefault(buf[start:line_end])
