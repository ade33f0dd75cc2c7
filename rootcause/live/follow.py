"""`rootcause watch`: follow log files another process writes, as `tail -F` does.

A path given is followed from its start (the lines already there are part of the job's story);
a directory is listed again on every poll and the files that appear in it are followed too
(torchrun's `--log-dir` fills `attempt_0/<rank>/stdout.log` after the job starts). A file whose
inode changes was rotated: the rest of the old file is read, then the new one from its start.
A file that shrank was truncated (`> out.log`): it is read again from its start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rootcause.engine.scanning import rank_from_name
from rootcause.live.monitor import Monitor

READ_SIZE = 1 << 16
# Read at most this much of one file per poll, so one busy file cannot starve the others.
MAX_PER_POLL = 8 << 20
# Files in a watched directory worth following: logs, not checkpoints or the bundle's JSON.
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
MAX_FILES = 1024


@dataclass
class Followed:
    path: Path
    inode: int | None = None
    offset: int = 0


class Follower:
    """The files of the paths given, read from where each was left on every `poll`."""

    def __init__(self, paths: list[str], monitor: Monitor) -> None:
        self.paths = [Path(p) for p in paths]
        self.monitor = monitor
        self.files: dict[Path, Followed] = {}
        self.notes: list[str] = []

    def _discover(self) -> None:
        for path in self.paths:
            if path.is_dir():
                for found in sorted(_logs_under(path)):
                    self._add(found)
            elif path.exists():  # a path not there yet may become a file or a directory
                self._add(path)

    def _add(self, path: Path) -> None:
        if path in self.files or len(self.files) >= MAX_FILES:
            return
        self.files[path] = Followed(path)
        # `attempt_0/3/stdout.log`: the rank is the directory's number; else `rank3.log`
        name = str(path)
        parent = path.parent.name
        guess = int(parent) if parent.isdigit() else rank_from_name(path.name, -1)
        default = guess if guess >= 0 else None
        self.monitor.add_source(name, default)

    def poll(self) -> int:
        """Reads what every file gained since the last poll; returns the bytes read."""
        self._discover()
        total = 0
        for followed in list(self.files.values()):
            total += self._read(followed)
        return total

    def _read(self, followed: Followed) -> int:
        try:
            stat = followed.path.stat()
        except OSError:
            return 0  # not there (yet, or between a rotation's rename and the new file)
        got = 0
        if followed.inode is not None and stat.st_ino != followed.inode:
            got += self._drain_rotated(followed)
            followed.inode, followed.offset = stat.st_ino, 0
            self.notes.append(f"{followed.path}: rotated; following the new file")
        elif stat.st_size < followed.offset:
            followed.offset = 0
            self.notes.append(f"{followed.path}: truncated; reading it again from its start")
        followed.inode = stat.st_ino
        if stat.st_size == followed.offset:
            return got
        try:
            with open(followed.path, "rb") as stream:
                stream.seek(followed.offset)
                got += self._copy(stream, followed)
        except OSError:
            pass
        return got

    def _drain_rotated(self, followed: Followed) -> int:
        """The old file's last lines, if it is still where rotation put it (`name.1`)."""
        for candidate in (Path(f"{followed.path}.1"), Path(f"{followed.path}.0")):
            try:
                if candidate.stat().st_ino == followed.inode:
                    with open(candidate, "rb") as stream:
                        stream.seek(followed.offset)
                        return self._copy(stream, followed)
            except OSError:
                continue
        return 0

    def _copy(self, stream: object, followed: Followed) -> int:
        got = 0
        read = stream.read  # type: ignore[attr-defined]
        while got < MAX_PER_POLL:
            data = read(READ_SIZE)
            if not data:
                break
            got += len(data)
            followed.offset += len(data)
            self.monitor.feed(str(followed.path), "file", data)
        return got


def _logs_under(directory: Path) -> list[Path]:
    out = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in files:
            if name.endswith(LOG_SUFFIXES) and not name.startswith("."):
                out.append(Path(root) / name)
    return out
