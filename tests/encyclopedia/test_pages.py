"""Encyclopedia pages for anonymous and signed-in readers."""

from __future__ import annotations

from typing import Any

from django.test import Client

from encyclopedia.selectors import SEARCH_MAX_BYTES


def test_index_lists_entries_by_category_with_severity(client: Client, small_catalogue: Any):
    response = client.get("/encyclopedia/")
    assert response.status_code == 200
    html = response.content.decode()
    # Categories in the reading order of the index: memory first, then distributed, checkpoint.
    assert (
        html.index('id="memory"') < html.index('id="distributed"') < html.index('id="checkpoint"')
    )
    assert 'href="/encyclopedia/test-oom/"' in html
    assert 'class="badge sev-high"' in html
    assert 'class="badge sev-low"' in html
    assert 'action="/encyclopedia/search/"' in html
    # The site layout: navigation to diagnose, the encyclopedia, the API docs and sign-in.
    for link in ('href="/"', 'href="/encyclopedia/"', 'href="/api/v1/docs"', "/accounts/login/"):
        assert link in html


def test_anonymous_entry_shows_free_parts_and_a_call_to_sign_up(
    client: Client, small_catalogue: Any
):
    response = client.get("/encyclopedia/test-oom/")
    assert response.status_code == 200
    html = response.content.decode()
    for free in (
        "The quick answer of test-oom",
        "The mechanism of test-oom",
        "symptom of test-oom",
        "first check of test-oom",
        "SIGNATURE-test-oom",
    ):
        assert free in html
    for gated in (
        "FIX-STEP-test-oom",
        "fixcmd-test-oom",
        "PREVENTION-test-oom",
        "verifycmd-test-oom",
        "CODE-test-oom",
    ):
        assert gated not in html
    assert "Sign up free" in html
    assert "next=/encyclopedia/test-oom/" in html.replace("%2F", "/")
    # Related entries link by title.
    assert 'href="/encyclopedia/test-nccl/">Test entry test-nccl</a>' in html


def test_signed_in_entry_shows_the_fix(client: Client, small_catalogue: Any, bob: Any) -> None:
    client.force_login(bob)
    html = client.get("/encyclopedia/test-oom/").content.decode()
    for gated in (
        "FIX-STEP-test-oom",
        "fixcmd-test-oom",
        "PREVENTION-test-oom",
        "verifycmd-test-oom",
        "CODE-test-oom",
    ):
        assert gated in html
    assert "Sign up free" not in html
    assert "SIGNATURE-test-oom" in html


def test_unknown_entry_is_404(client: Client, small_catalogue: Any) -> None:
    assert client.get("/encyclopedia/no-such-thing/").status_code == 404


def test_entry_text_is_escaped(client: Client, small_catalogue: Any) -> None:
    from encyclopedia import services
    from encyclopedia.models import Entry

    entry = Entry.objects.get(slug="test-disk")
    services.update_entry(
        entry=entry,
        data={
            **entry.data,
            "signatures": ["<script>alert(1)</script>"],
            "mechanism": entry.data["mechanism"] + " Call `torch.cuda.<b>x</b>()` then <i>y</i>.",
        },
    )
    html = client.get("/encyclopedia/test-disk/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # Backticks become <code>; everything else stays escaped.
    assert "Call <code>torch.cuda.&lt;b&gt;x&lt;/b&gt;()</code> then &lt;i&gt;y&lt;/i&gt;." in html


def test_search_page_lists_matches_with_lines(client: Client, small_catalogue: Any) -> None:
    assert client.get("/encyclopedia/search/").status_code == 200
    response = client.post(
        "/encyclopedia/search/", {"text": "hello\nRuntimeError: TEST-NCCL-BOOM: out of memory\n"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "1 matching entry" in html
    assert 'href="/encyclopedia/test-nccl/">Test entry test-nccl</a>' in html
    assert (
        '<td class="num">2</td><td><code>RuntimeError: TEST-NCCL-BOOM: out of memory</code></td>'
        in html
    )


def test_search_page_no_match_and_too_large(client: Client, small_catalogue: Any) -> None:
    html = client.post("/encyclopedia/search/", {"text": "nothing here"}).content.decode()
    assert "No entry matched" in html
    response = client.post("/encyclopedia/search/", {"text": "x" * (SEARCH_MAX_BYTES + 1)})
    assert response.status_code == 413
    assert "limited to 1024 KiB" in response.content.decode()


def test_memory_estimate_page(client: Client, db: Any) -> None:
    empty = client.get("/encyclopedia/tools/memory-estimate/")
    assert empty.status_code == 200
    assert "<h2>Formula</h2>" not in empty.content.decode()

    response = client.get(
        "/encyclopedia/tools/memory-estimate/",
        {
            "params": "7B",
            "optimizer": "adamw",
            "precision": "mixed",
            "zero_stage": "0",
            "dp_size": "1",
            "gpu_memory_gib": "80",
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "112.00 GB" in html
    assert "Does not fit" in html
    assert "optimizer states: 8 B/param x 7,000,000,000 params" in html
    assert "activations not counted" in html


def test_memory_estimate_page_shows_errors(client: Client, db: Any) -> None:
    response = client.get(
        "/encyclopedia/tools/memory-estimate/", {"params": "-3", "zero_stage": "4"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="error"' in html
    assert "<h2>Formula</h2>" not in html
