"""The home page's install line works: `make downloads` builds the wheel, a live server serves it,
and the very command the page shows installs the client into a fresh virtualenv.

The client's dependencies are put into the virtualenv first from uv's cache (the versions of
requirements-client.lock, which `make install` has fetched), so the page's `pip install` finds them
satisfied and fetches only the wheel, from the service; PyPI is asked only if the cache lacks one.
"""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.release import build_release

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
UV = Path(sys.executable).parent / "uv"
LOG = ROOT / "tests/logs/optimizer-state-oom/skypilot_rank1_adamw_oom.log"

pytestmark = [pytest.mark.heavy, pytest.mark.django_db(transaction=True)]


def _run(*argv: str | Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def _dependencies_from_the_cache(python: Path) -> None:
    lock = ROOT / "requirements-client.lock"
    base = (UV, "pip", "install", "--quiet", "--python", python, "-r", lock)
    if _run(*base[:2], "--offline", *base[2:]).returncode != 0:
        done = _run(*base)
        assert done.returncode == 0, done.stderr


def test_the_home_pages_install_line_installs_the_client_from_the_service(
    live_server: Any, settings: Any, tmp_path: Path
):
    dist = tmp_path / "dist"
    settings.SITE_URL = live_server.url
    settings.DOWNLOADS_DIR = dist
    build_release(dist)

    home = httpx.get(f"{live_server.url}/", timeout=30)
    (line,) = re.findall(r'<pre class="install-pip">(.*?)</pre>', home.text)
    line = html.unescape(line)
    assert line == f"pip install {live_server.url}/downloads/rootcause-{VERSION}-py3-none-any.whl"

    venv = tmp_path / "venv"
    created = _run(sys.executable, "-m", "venv", venv)
    assert created.returncode == 0, created.stderr
    _dependencies_from_the_cache(venv / "bin" / "python")
    command, *arguments = shlex.split(line)
    installed = _run(venv / "bin" / command, *arguments)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    version = _run(venv / "bin" / "rootcause", "--version")
    assert version.stdout.strip() == f"rootcause {VERSION}", version.stderr
    diagnosed = _run(venv / "bin" / "rootcause", "diagnose", LOG, "--offline", "--json")
    assert diagnosed.returncode == 1, diagnosed.stderr  # 1: a failure was diagnosed
    assert '"optimizer-state-oom"' in diagnosed.stdout
