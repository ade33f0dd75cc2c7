"""Running `rootcause run` / `rootcause watch` as a user would, and timing what each prints."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the installed command beside this Python (.venv/bin/rootcause), as a user runs it
ROOTCAUSE = [str(Path(sys.executable).parent / "rootcause")]
REALRUNS = ROOT / ".venv-realruns" / "bin"


@dataclass
class Line:
    at: float  # time.monotonic() when the line arrived
    stream: str  # "out" or "err"
    text: str


@dataclass
class Watched:
    """A `rootcause` process whose output lines are timestamped as they arrive."""

    proc: subprocess.Popen[bytes]
    started: float
    lines: list[Line] = field(default_factory=list)
    raw: dict[str, bytearray] = field(
        default_factory=lambda: {"out": bytearray(), "err": bytearray()}
    )
    ended: float | None = None

    def first(self, needle: str, stream: str | None = None) -> Line | None:
        for line in list(self.lines):
            if needle in line.text and (stream is None or line.stream == stream):
                return line
        return None

    def wait_for(self, needle: str, timeout: float) -> Line | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.first(needle)
            if found is not None:
                return found
            if self.proc.poll() is not None and not any(r.is_alive() for r in self._readers):
                return None
            time.sleep(0.05)
        return None

    def finish(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def text(self, stream: str | None = None) -> str:
        return "\n".join(
            line.text for line in self.lines if stream is None or line.stream == stream
        )

    _readers: list[threading.Thread] = field(default_factory=list)


def start(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Watched:
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    for name in ("ROOTCAUSE_URL", "ROOTCAUSE_TOKEN"):
        if name not in (env or {}):
            environment.pop(name, None)
    proc = subprocess.Popen(
        [*ROOTCAUSE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        cwd=cwd,
    )
    watched = Watched(proc, time.monotonic())

    def read(stream: object, name: str) -> None:
        pending = b""
        while True:
            data = os.read(stream.fileno(), 1 << 16)  # type: ignore[attr-defined]
            if not data:
                break
            watched.raw[name] += data
            pending += data
            *done, pending = pending.split(b"\n")
            now = time.monotonic()
            for line in done:
                watched.lines.append(Line(now, name, line.decode("utf-8", "replace")))
        if pending:
            watched.lines.append(Line(time.monotonic(), name, pending.decode("utf-8", "replace")))
        watched.ended = time.monotonic()

    watched._readers = [
        threading.Thread(target=read, args=(proc.stdout, "out"), daemon=True),
        threading.Thread(target=read, args=(proc.stderr, "err"), daemon=True),
    ]
    for reader in watched._readers:
        reader.start()
    return watched
