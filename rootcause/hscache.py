"""Compiled Hyperscan databases kept on disk, so that a process starts without compiling them.

Compiling the engine's database (every catalogue signal and the engine's markers) and the
masking databases costs about a second of CPU; loading a serialised one costs milliseconds. The
command line starts a process per use, so ``rootcause diagnose --offline`` on a small log was
mostly compilation. A database is stored under a digest of everything that makes it (the
expressions, their ids and flags, the mode, the Hyperscan version): an edit of any pattern is a
new file, never a stale database. Hyperscan refuses to load a database built for another CPU;
it is then compiled and stored again. Only fixed patterns are cached (the shipped catalogue's,
the masking patterns): never a database of names learned from a log or of an organisation's
terms.

The directory is ``ROOTCAUSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rootcause``, else
``~/.cache/rootcause``; ``ROOTCAUSE_CACHE_DIR=off`` turns the cache off. A directory that cannot
be written, or a file that does not load (another machine's CPU, a truncated write), only means
compiling as before: the cache never decides what is matched.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import hyperscan

CACHE_ENV = "ROOTCAUSE_CACHE_DIR"
# The shipped databases take about 3 MB; a test or a benchmark compiles more.
MAX_BYTES = 64 << 20
_OFF = "off"


def cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured == _OFF:
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rootcause"


def _digest(expressions: list[bytes], ids: list[int], flags: list[int], mode: int) -> str:
    h = hashlib.sha256()
    version = getattr(hyperscan, "__version__", "?")
    h.update(f"hs={version};mode={mode};n={len(expressions)}\0".encode())
    for expression, pid, flag in zip(expressions, ids, flags, strict=True):
        h.update(f"{pid}:{flag}:{len(expression)}:".encode())
        h.update(expression)
    return h.hexdigest()[:32]


def _load(path: Path, mode: int) -> hyperscan.Database | None:
    try:
        db = hyperscan.loadb(path.read_bytes(), mode)
        # A loaded database comes without the scratch space that compile() allocates.
        db.scratch = hyperscan.Scratch(db)
        os.utime(path)  # recently used: the last to be pruned
    except (OSError, hyperscan.error):
        return None
    return db


def _prune(directory: Path) -> None:
    """Keep the cache under MAX_BYTES: the least recently used databases go first (every
    edit of the catalogue makes a new one)."""
    try:
        files = sorted((f.stat().st_mtime, f.stat().st_size, f) for f in directory.glob("*.hsdb"))
        total = sum(size for _, size, _ in files)
        for _, size, f in files:
            if total <= MAX_BYTES:
                break
            f.unlink(missing_ok=True)
            total -= size
    except OSError:
        pass


def _store(path: Path, db: hyperscan.Database) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hs-")
        with os.fdopen(fd, "wb") as f:
            f.write(hyperscan.dumpb(db))
        os.replace(tmp, path)  # atomic: a reader sees the whole file or none
    except (OSError, hyperscan.error):
        return
    _prune(path.parent)


def compiled(
    expressions: list[bytes],
    flags: list[int],
    ids: list[int] | None = None,
    mode: int = hyperscan.HS_MODE_BLOCK,
) -> hyperscan.Database:
    """A database as ``Database.compile`` makes it, loaded from the cache when it is there.

    Compilation errors (``hyperscan.error``) are raised as by ``compile``.
    """
    ids = list(range(len(expressions))) if ids is None else ids
    directory = cache_dir()
    path = None
    if directory is not None:
        path = directory / f"{_digest(expressions, ids, flags, mode)}.hsdb"
        db = _load(path, mode)
        if db is not None:
            return db
    db = hyperscan.Database(mode=mode)
    db.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    if path is not None:
        _store(path, db)
    return db
