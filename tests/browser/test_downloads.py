"""/downloads/ in Chromium: the release the service serves (the client wheel built by `make
downloads`, and the VS Code extension) listed with sha256 and install lines, fitting a phone and a
desktop, axe clean at both; each link downloads, through the browser, the very file whose sha256
the page shows, and the install lines name those files on this service."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import DESKTOP, PHONE, assert_accessible, screenshot
from tests.release import ROOT, WHEEL, build_release

VSCODE_VERSION = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())["version"]
VSIX = f"rootcause-vscode-{VSCODE_VERSION}.vsix"


def _extension_package(path: Path) -> None:
    """A .vsix of the extension's form (an OPC zip: its content types, its manifest, the
    extension's package.json): the real one needs Node and vsce (`make vscode`), which this test
    does not run; what is checked here is that the page serves the bytes it hashes."""
    manifest = f"""<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">
  <Metadata><Identity Id="rootcause-vscode" Version="{VSCODE_VERSION}" Publisher="rootcause"/>
  <DisplayName>rootcause</DisplayName></Metadata>
  <Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>
  <Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json"/></Assets>
</PackageManifest>"""
    types = """<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
  <Default Extension=".json" ContentType="application/json"/>
  <Default Extension=".vsixmanifest" ContentType="text/xml"/>
</Types>"""
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("[Content_Types].xml", types)
        package.writestr("extension.vsixmanifest", manifest)
        package.write(ROOT / "editors" / "vscode" / "package.json", "extension/package.json")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    build_release(dist)
    if not (dist / VSIX).is_file():  # `make vscode` has not built the real one here
        _extension_package(dist / VSIX)
    return dist


def _rows(page: Any) -> dict[str, str]:
    """File name: the sha256 shown beside it."""
    rows = page.locator("main table tbody tr")
    shown = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        shown[row.get_by_role("link").inner_text()] = row.locator("code.sha256").inner_text()
    return shown


def test_the_downloads_page_fits_both_widths_and_its_links_download_what_it_hashes(
    page: Any, site: str, settings: Any, release: Path
) -> None:
    settings.DOWNLOADS_DIR = release  # the live server runs in this process
    settings.SITE_URL = site
    page.goto("/")
    page.get_by_role("link", name="install the client").first.click()
    page.wait_for_url(f"{site}/downloads/")

    shown = _rows(page)
    assert set(shown) == {WHEEL, VSIX}
    for name, sha256 in shown.items():
        with page.expect_download() as started:
            page.get_by_role("link", name=name, exact=True).click()
        download = started.value
        assert download.suggested_filename == name
        received = Path(download.path()).read_bytes()
        assert hashlib.sha256(received).hexdigest() == sha256, name
        assert received == (release / name).read_bytes()

    # The install lines name those files on this service, and fetch the same bytes.
    pip = page.locator("pre.install-pip").inner_text()
    assert pip == f"pip install {site}/downloads/{WHEEL}"
    code = page.locator("pre.install-code").inner_text()
    assert code == f"curl -fLO {site}/downloads/{VSIX} && code --install-extension {VSIX}"
    for url, name in ((pip.split()[-1], WHEEL), (code.split()[2], VSIX)):
        fetched = httpx.get(url, timeout=30)
        assert fetched.status_code == 200
        assert hashlib.sha256(fetched.content).hexdigest() == shown[name]

    screenshot(page, "downloads")  # both widths; nothing wider than a phone's screen
    for viewport in (PHONE, DESKTOP):
        page.set_viewport_size(viewport)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"/downloads/ is {width} px wide at {viewport['width']}"
        # the sha256 is readable whole: not clipped by its cell
        cell = page.locator("code.sha256").first
        assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        assert_accessible(page)


def test_an_empty_release_directory_says_what_the_operator_runs(
    page: Any, settings: Any, tmp_path: Path
) -> None:
    settings.DOWNLOADS_DIR = tmp_path
    page.goto("/downloads/")
    assert "this service's operator runs make downloads" in page.locator("main").inner_text()
    assert page.locator("main table").count() == 0
    for viewport in (PHONE, DESKTOP):
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        assert_accessible(page)
