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
from collections.abc import Iterable, Iterator

import hyperscan

from rootcause.masking.scanner import Database

_RUN = re.compile(rb"[a-z0-9._-]+")
_ATOM = re.compile(rb"[a-z0-9]+")
# A learned name is at least this long (masker._learnable).
_MIN_NAME = 4
# Names of more atoms than this are not looked for (ip-10-0-12-34 is five).
_MAX_ATOMS = 16
_SEPARATOR = b"[-._]"
# The lines read for the names are learned from in batches of about this many bytes.
_BATCH = 1 << 20


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


def teaching_lines(pieces: Iterable[bytes], names: set[bytes]) -> Iterator[bytes]:
    """The lines of the log (``pieces``: its bytes in order) that hold one of ``names`` as
    ``mentioned_names`` gives them, in batches of whole lines of about ``_BATCH`` bytes (a name
    on every line of a big log must not bring the whole log into memory at once); a line
    repeated within a batch comes once."""
    if not names:
        return
    db = Database([_pattern(n) for n in sorted(names)], [hyperscan.HS_FLAG_CASELESS] * len(names))
    lines: dict[bytes, None] = {}  # in the log's order, once each
    size = 0
    carry = b""
    for piece in pieces:
        buf = carry + piece
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        for line in _lines_with(db, buf[:cut]):
            if line not in lines:
                lines[line] = None
                size += len(line)
                if size >= _BATCH:
                    yield b"".join(lines)
                    lines.clear()
                    size = 0
    if carry:
        for line in _lines_with(db, carry + b"\n"):
            lines.setdefault(line)
    if lines:
        yield b"".join(lines)


def _lines_with(db: Database, buf: bytes) -> Iterator[bytes]:
    """The lines of ``buf`` (whole lines) where ``db`` matches, in order."""
    line_end = -1
    for end in sorted(end for _, _, end in db.scan(buf)):
        if end <= line_end:
            continue  # in the line just taken
        start = buf.rfind(b"\n", 0, max(0, end - 1)) + 1
        line_end = buf.find(b"\n", end - 1) + 1
        yield buf[start:line_end]
