"""/downloads/: the client wheel and the VS Code extension served by the service itself, with
their sha256, and install commands on SITE_URL on the pages that offer the client."""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

SITE = "https://rc.test:9443"
WHEEL = "rootcause-0.1.0-py3-none-any.whl"
VSIX = "rootcause-vscode-0.1.0.vsix"


@pytest.fixture
def dist(settings: Any, tmp_path: Path) -> Path:
    settings.SITE_URL = SITE
    settings.DOWNLOADS_DIR = tmp_path
    (tmp_path / WHEEL).write_bytes(b"a wheel, as far as this test cares\n" * 100)
    (tmp_path / VSIX).write_bytes(b"an extension\n" * 50)
    (tmp_path / "rootcause-0.0.9-py3-none-any.whl").write_bytes(b"an older wheel\n")
    (tmp_path / "notes.txt").write_text("not a release file\n")
    (tmp_path / "rootcause-0.1.0.tar.gz").write_bytes(b"not served either\n")
    return tmp_path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_page_lists_each_release_file_with_its_sha256_and_the_commands(client: Client, dist):
    page = client.get("/downloads/")

    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    for name in (WHEEL, VSIX, "rootcause-0.0.9-py3-none-any.whl"):
        assert f'href="/downloads/{name}"' in text
        assert _sha(dist / name) in text
    assert "notes.txt" not in text
    assert "tar.gz" not in text
    assert f"pip install {SITE}/downloads/{WHEEL}" in text  # the newest wheel
    assert f"curl -fLO {SITE}/downloads/{VSIX} && code --install-extension {VSIX}" in text
    assert f"export ROOTCAUSE_URL={SITE} " in text


def test_a_file_is_served_byte_for_byte_as_an_attachment(client: Client, dist):
    response = client.get(f"/downloads/{WHEEL}")

    assert response.status_code == 200
    assert response.getvalue() == (dist / WHEEL).read_bytes()
    assert response["Content-Disposition"] == f'attachment; filename="{WHEEL}"'


@pytest.mark.parametrize(
    "name",
    [
        "notes.txt",
        "rootcause-0.1.0.tar.gz",
        "rootcause-9.9.9-py3-none-any.whl",  # named like one, but not there
        "..%2Fconfig%2Fsettings.py",
        "%2E%2E",
    ],
)
def test_nothing_but_a_listed_release_file_is_served(client: Client, dist, name):
    assert client.get(f"/downloads/{name}").status_code == 404


def test_the_index_says_the_same_as_json(client: Client, dist):
    index = client.get("/downloads/index.json").json()

    assert index["wheel"] == {
        "name": WHEEL,
        "version": "0.1.0",
        "url": f"{SITE}/downloads/{WHEEL}",
        "size": (dist / WHEEL).stat().st_size,
        "sha256": _sha(dist / WHEEL),
    }
    assert index["vsix"]["url"] == f"{SITE}/downloads/{VSIX}"
    assert [f["name"] for f in index["files"]] == [
        WHEEL,
        "rootcause-0.0.9-py3-none-any.whl",
        VSIX,
    ]


def test_a_replaced_file_gets_its_new_sha256(client: Client, dist):
    before = client.get("/downloads/index.json").json()["wheel"]["sha256"]
    (dist / WHEEL).write_bytes(b"rebuilt, and longer than before " * 200)

    after = client.get("/downloads/index.json").json()["wheel"]["sha256"]

    assert before != after == _sha(dist / WHEEL)


def test_without_a_build_the_pages_say_how_to_make_one(client: Client, settings, tmp_path):
    settings.DOWNLOADS_DIR = tmp_path / "missing"

    page = client.get("/downloads/").content.decode()
    home = client.get("/").content.decode()

    assert "make downloads" in page
    assert "pip install ." in home
    assert "pip install http" not in home
    assert client.get("/downloads/index.json").json() == {"wheel": None, "vsix": None, "files": []}


def test_the_home_page_gives_the_install_lines_of_this_service(client: Client, dist):
    text = html.unescape(client.get("/").content.decode())

    (line,) = re.findall(r'<pre class="install-pip">(.*?)</pre>', text)
    assert line == f"pip install {SITE}/downloads/{WHEEL}"
    (code,) = re.findall(r'<pre class="install-code">(.*?)</pre>', text)
    assert code == f"curl -fLO {SITE}/downloads/{VSIX} && code --install-extension {VSIX}"
    assert 'href="/downloads/"' in text


def test_the_entry_page_offers_the_client_and_the_editor_extension(
    client: Client, dist, small_catalogue
):
    text = html.unescape(client.get("/encyclopedia/test-oom/").content.decode())

    assert f"pip install {SITE}/downloads/{WHEEL}" in text
    assert 'id="editor"' in text
    assert f'href="/downloads/{VSIX}"' in text
    assert f"code --install-extension {VSIX}" in text
    assert _sha(dist / VSIX)[:14] in text
