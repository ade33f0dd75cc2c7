"""The install lines of the docs name the release this checkout builds (`make downloads` serves
it at /downloads/), and no placeholder host: each works against a running service."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "editors/vscode/README.md",
    ROOT / "action.yml",
]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
EXTENSION = json.loads((ROOT / "editors/vscode/package.json").read_text())["version"]


def _found(pattern: str) -> list[tuple[str, str]]:
    return [(path.name, match) for path in DOCS for match in re.findall(pattern, path.read_text())]


def test_every_wheel_named_in_the_docs_is_this_version():
    wheels = _found(r"/downloads/rootcause-(\d[^-/\s]*)-py3-none-any\.whl")

    assert {name for name, _ in wheels} >= {"README.md", "ci.md", "live.md"}
    assert {version for _, version in wheels} == {VERSION}, wheels


def test_every_extension_named_in_the_docs_is_the_extensions_version():
    extensions = _found(r"rootcause-vscode-(\d[^/\s]*?)\.vsix")

    assert extensions
    assert {version for _, version in extensions} == {EXTENSION}, extensions


def test_no_install_line_points_at_a_placeholder_repository():
    lines = [
        (path.name, line.strip())
        for path in DOCS
        for line in path.read_text().splitlines()
        if "pip install" in line and ("git+" in line or "example.com" in line)
    ]

    assert lines == []
