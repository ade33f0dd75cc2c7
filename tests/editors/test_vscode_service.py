"""The VS Code extension against a live service (`make vscode` runs this after the extension's own
tests): its node tests of `editors/vscode/test-live/service.js` drive the extension (a fake `vscode`
module, the real client) against this live server, and what the service stored is checked here;
and the `.vsix` install line of the downloads page is run as a user would run it.

`code` itself cannot be installed here: a stand-in on the PATH records what it was given, and the
test reads the package it was given as VS Code's installer would (a zip with extension/package.json).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from diagnosis.models import Diagnosis
from feedback.models import Feedback

ROOT = Path(__file__).resolve().parents[2]
EDITOR = ROOT / "editors/vscode"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
EXTENSION = json.loads((EDITOR / "package.json").read_text())["version"]
WHEEL = f"rootcause-{VERSION}-py3-none-any.whl"
VSIX = f"rootcause-vscode-{EXTENSION}.vsix"
CLIENT = Path(sys.executable).parent / "rootcause"

pytestmark = [pytest.mark.heavy, pytest.mark.django_db(transaction=True)]
built = pytest.mark.skipif(
    shutil.which("node") is None or not (EDITOR / "out/extension.js").is_file(),
    reason="the extension is not built: make vscode builds it, then runs this",
)
packaged = pytest.mark.skipif(
    not (EDITOR / "rootcause-vscode.vsix").is_file(),
    reason="no .vsix: make vscode packages it, then runs this",
)


def _run(*argv: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=600, **kwargs
    )


@pytest.fixture
def service(live_server: Any, settings: Any, tmp_path: Path) -> str:
    """The live server, serving the release `make downloads` builds (the wheel, the .vsix)."""
    dist = tmp_path / "dist"
    settings.SITE_URL = live_server.url
    settings.DOWNLOADS_DIR = dist
    done = _run("make", "-s", "downloads", f"DIST={dist}", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (dist / WHEEL).is_file()
    return str(live_server.url)


@built
def test_the_extension_sends_bundles_and_verdicts_to_the_service(
    service: str, acme_token: str, catalogue: Any, tmp_path: Path
):
    seen = tmp_path / "seen.json"
    env = {
        **os.environ,
        "ROOTCAUSE_CLIENT": str(CLIENT),
        "ROOTCAUSE_TEST_SERVICE": service,
        "ROOTCAUSE_TEST_TOKEN": acme_token,
        "ROOTCAUSE_TEST_WHEEL": WHEEL,
        "ROOTCAUSE_TEST_SEEN": str(seen),
    }
    env.pop("ROOTCAUSE_TOKEN", None)
    env.pop("ROOTCAUSE_URL", None)

    done = _run("node", "--test", "test-live/service.js", cwd=EDITOR, env=env)

    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert re.search(r"^# pass 3$", done.stdout, re.M), report
    assert re.search(r"^# skipped 0$", done.stdout, re.M), report
    ids = json.loads(seen.read_text())
    member = Diagnosis.objects.get(pk=ids["member"])
    visitor = Diagnosis.objects.get(pk=ids["visitor"])
    assert (member.kind, member.filename) == ("bundle", "dataloader__0.tar.gz")
    assert member.organization is not None
    assert visitor.kind == "bundle"
    assert visitor.filename.startswith("visitor-job-")
    assert visitor.organization is None
    said = Feedback.objects.get(diagnosis=member)  # Right, then changed to Wrong: one verdict
    assert (said.verdict, said.correct_slug, said.note) == (
        "wrong",
        "nccl-timeout",
        "the peer's NIC went down",
    )
    assert Feedback.objects.get(diagnosis=visitor).verdict == "right"
    assert Feedback.objects.count() == 2  # the refused class stored nothing


@packaged
def test_the_downloads_pages_vsix_line_fetches_the_extension_this_checkout_built(
    service: str, tmp_path: Path
):
    page = html.unescape(httpx.get(f"{service}/downloads/", timeout=30).text)
    (line,) = re.findall(r'<pre class="install-code">(.*?)</pre>', page)
    assert line == f"curl -fLO {service}/downloads/{VSIX} && code --install-extension {VSIX}"
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    (stand_in / "code").write_text('#!/bin/sh\necho "$@" > "$CODE_ARGS"\n')
    (stand_in / "code").chmod(0o755)
    work = tmp_path / "user"
    work.mkdir()
    args = tmp_path / "code-args.txt"

    done = _run(
        "sh",
        "-c",
        line,
        cwd=work,
        env={**os.environ, "PATH": f"{stand_in}:{os.environ['PATH']}", "CODE_ARGS": str(args)},
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert args.read_text().split() == ["--install-extension", VSIX]
    fetched = (work / VSIX).read_bytes()
    assert fetched == (EDITOR / "rootcause-vscode.vsix").read_bytes()
    assert hashlib.sha256(fetched).hexdigest()[:14] in page
    with zipfile.ZipFile(work / VSIX) as vsix:
        manifest = json.loads(vsix.read("extension/package.json"))
        names = set(vsix.namelist())
    assert (manifest["name"], manifest["version"]) == ("rootcause-vscode", EXTENSION)
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {"rootcause.diagnoseBundle", "rootcause.feedback"} <= commands
    assert "extension/dist/extension.js" in names
