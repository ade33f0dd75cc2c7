"""The release served by the service itself: the client wheel and the VS Code extension that
`make downloads` (and `make vscode`) put in DOWNLOADS_DIR, with their sha256, and the install
commands built on SITE_URL, so that every page gives a line that works against this service.

Only files named like a release are served, by their exact name: nothing else of the directory,
and no path, is reachable.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import Http404

from plumbing.links import absolute_url

# rootcause-0.1.0-py3-none-any.whl, rootcause-vscode-0.1.0.vsix
WHEEL = re.compile(r"^rootcause-(?P<version>[0-9][0-9A-Za-z.+]*)-py3-none-any\.whl$")
VSIX = re.compile(r"^rootcause-vscode-(?P<version>[0-9][0-9A-Za-z.+-]*)\.vsix$")
_CHUNK = 1 << 20
# sha256 by (path, size, mtime): a file replaced by `make downloads` is hashed again.
_digests: dict[tuple[str, int, int], str] = {}


@dataclass(frozen=True)
class Download:
    name: str
    kind: str  # "wheel" or "vsix"
    version: str
    size: int
    sha256: str

    @property
    def path(self) -> str:
        return f"/downloads/{self.name}"

    @property
    def url(self) -> str:
        return absolute_url(self.path)


@dataclass(frozen=True)
class Install:
    """What a page shows to install the client and the editor extension from this service."""

    wheel: Download | None
    vsix: Download | None

    @property
    def pip(self) -> str:
        return f"pip install {self.wheel.url}" if self.wheel else ""

    @property
    def code(self) -> str:
        if not self.vsix:
            return ""
        return f"curl -fLO {self.vsix.url} && code --install-extension {self.vsix.name}"


def _directory() -> Path:
    return Path(settings.DOWNLOADS_DIR)


def _sha256(path: Path, size: int, mtime: int) -> str:
    key = (str(path), size, mtime)
    if key not in _digests:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK):
                digest.update(chunk)
        _digests[key] = digest.hexdigest()
    return _digests[key]


def _version_key(version: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.+-]", version))


def downloads() -> list[Download]:
    """The release files of DOWNLOADS_DIR: the wheels, then the extensions, newest first."""
    directory = _directory()
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        for kind, pattern in (("wheel", WHEEL), ("vsix", VSIX)):
            match = pattern.match(path.name)
            if match and path.is_file():
                stat = path.stat()
                sha = _sha256(path, stat.st_size, stat.st_mtime_ns)
                found.append(Download(path.name, kind, match["version"], stat.st_size, sha))
    found.sort(key=lambda d: _version_key(d.version), reverse=True)
    found.sort(key=lambda d: d.kind != "wheel")  # stable: each kind stays newest first
    return found


def install() -> Install:
    files = downloads()
    return Install(
        wheel=next((d for d in files if d.kind == "wheel"), None),
        vsix=next((d for d in files if d.kind == "vsix"), None),
    )


def download_path(name: str) -> Path:
    """The file served under /downloads/<name>: only a listed release file, else 404."""
    if not any(d.name == name for d in downloads()):
        raise Http404("No such download.")
    return _directory() / name
