"""The page's evidence selection (static/diagnosis/extract.js, run by node) keeps the lines the
CLI's extraction (rootcause/extract.py) keeps, on the vectors of tests/extraction_vectors.json:
the real logs of tests/logs, with small windows and at the CLI's own sizes."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from rootcause.engine import get_engine
from rootcause.extract import browser_patterns, js_regex
from tests import extraction_vectors as vectors

ROOT = vectors.ROOT
NODE = shutil.which("node")
pytestmark = pytest.mark.slow


def run_js(spec: dict[str, Any], cases: list[dict[str, Any]]) -> list[list[int]]:
    if NODE is None:
        pytest.skip("node is not installed: the page's script cannot be run outside a browser")
    done = subprocess.run(
        [NODE, str(ROOT / "tests/js/select.js")],
        input=json.dumps({"spec": spec, "cases": cases}),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: list[list[int]] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(vectors.VECTORS.read_text())
    return data


def test_the_vectors_are_real_logs_and_keep_more_than_head_and_tail(
    stored: dict[str, Any],
) -> None:
    logs = {p.relative_to(vectors.LOGS).as_posix() for p in vectors.LOGS.rglob("*.log")}
    assert {case["log"] for case in stored["cases"]} <= logs
    assert len(stored["cases"]) >= 280
    # The selections are not trivial: lines beyond the head and the tail, and lines left out.
    beyond = left_out = 0
    for case in stored["cases"]:
        n = vectors.case_text(case).count("\n")
        options = case["options"]
        beyond += sum(1 for i in case["kept"] if options["head"] <= i < n - options["tail"])
        left_out += n - len(case["kept"])
    assert beyond > 1000
    assert left_out > 1000


def test_the_python_extractor_still_keeps_the_stored_lines(stored: dict[str, Any]) -> None:
    if stored["catalogue_version"] != get_engine().version:
        pytest.skip(
            "the catalogue changed since the vectors were written: "
            "`python -m tests.extraction_vectors` rewrites them"
        )
    for case in stored["cases"]:
        kept, taught_only = vectors.python_selection(vectors.case_text(case), case["options"])
        assert (kept, taught_only) == (case["kept"], case["taught_only"]), case["log"]


def test_the_page_keeps_the_lines_the_cli_keeps(stored: dict[str, Any]) -> None:
    """The stored cases, and the logs added to tests/logs since they were written, through both
    extractors as they are now."""
    engine = get_engine()
    current = stored["catalogue_version"] == engine.version
    known = {
        (c["log"], json.dumps(c["options"]), json.dumps(c.get("padded"))): c
        for c in stored["cases"]
    }
    cases, expected = [], []
    for case in vectors.cases():
        key = (case["log"], json.dumps(case["options"]), json.dumps(case.get("padded")))
        if current and key in known:
            kept, taught_only = known[key]["kept"], known[key]["taught_only"]
        else:
            kept, taught_only = vectors.python_selection(vectors.case_text(case), case["options"])
        cases.append(case)
        expected.append(sorted(set(kept) - set(taught_only)))
    got = run_js(
        browser_patterns(engine),
        [{"text": vectors.case_text(c), "options": c["options"]} for c in cases],
    )
    differ = [
        (case["log"], case["options"], sorted(set(want) ^ set(have))[:10])
        for case, want, have in zip(cases, expected, got, strict=True)
        if want != have
    ]
    assert not differ, differ


def test_every_fingerprint_compiles_as_a_javascript_pattern() -> None:
    spec = browser_patterns(get_engine())
    if NODE is None:
        pytest.skip("node is not installed")
    patterns = [*spec["signals"], *spec["internal"]]  # type: ignore[misc]
    script = (
        "const ps = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const bad = ps.filter(p => { try { new RegExp(p.source, p.flags); return false; }"
        " catch (e) { return true; } });"
        "process.stdout.write(JSON.stringify(bad));"
    )
    done = subprocess.run(
        [NODE, "-e", script], input=json.dumps(patterns), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []


def test_js_regex_turns_the_python_only_syntax_into_javascript() -> None:
    assert js_regex(r"(?i)nccl (?P<op>\w+) timeout") == {
        "source": r"nccl (?<op>\w+) timeout",
        "flags": "i",
    }
    assert js_regex("plain") == {"source": "plain", "flags": ""}


def test_the_page_gets_the_current_catalogues_patterns(client: Any, catalogue: Any) -> None:
    from encyclopedia.selectors import current_engine

    response = client.get("/extraction.json")
    assert response.status_code == 200
    assert "max-age=300" in response["Cache-Control"]
    body = response.json()
    engine = current_engine()
    assert body["version"] == engine.version
    assert len(body["signals"]) == len(engine.signals)
    assert [p["name"] for p in body["internal"]][:2] == ["traceback", "exception"]
    # The home page loads the script that uses them, and says where they are.
    html = client.get("/").content.decode()
    assert 'data-patterns="/extraction.json"' in html
    assert "diagnosis/extract" in html
