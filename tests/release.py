"""The release that /downloads/ serves, built as its operator builds it (`make downloads`), for
the tests that download or install it. One build at a time on the machine: the wheel is built in
the tree (setuptools' `build/`, removed after), which two builds at once would share."""

from __future__ import annotations

import fcntl
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"rootcause-{VERSION}-py3-none-any.whl"
_LOCK = ROOT / ".venv" / ".release-build.lock"


def build_release(dist: Path) -> Path:
    """`make downloads DIST=dist`: the client wheel (and the .vsix, when `make vscode` has built
    one); the wheel's path."""
    with _LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = subprocess.run(
            ["make", "-s", "downloads", f"DIST={dist}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = dist / WHEEL
    assert wheel.is_file(), sorted(p.name for p in dist.iterdir())
    return wheel
