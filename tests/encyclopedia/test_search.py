"""Search with the shipped catalogue: keywords and pasted error text in any case find entries, and
each result shows the searched lines that matched next to what they matched in the entry."""

from __future__ import annotations

from typing import Any

from django.test import Client
from rest_framework.test import APIClient

from encyclopedia.selectors import search_entries

OOM_PASTE = (
    "step 412 loss 2.21\n"
    "TORCH.OUTOFMEMORYERROR: CUDA OUT OF MEMORY. TRIED TO ALLOCATE 4.00 GIB. GPU 1 HAS A TOTAL "
    "CAPACITY OF 79.15 GIB OF WHICH 0.90 GIB IS FREE.\n"
)


def by_slug(results: list[Any]) -> dict[str, Any]:
    return {r.slug: r for r in results}


def test_keywords_find_entries_with_the_query_and_the_entry_lines(catalogue: Any) -> None:
    found = by_slug(search_entries("NCCL timeout"))
    assert "nccl-timeout" in found
    match = found["nccl-timeout"]
    assert [(line.line, line.text) for line in match.lines] == [(1, "NCCL timeout")]
    assert match.matched
    for pair in match.matched:
        assert (pair.line, pair.text) == (1, "NCCL timeout")
        # Each entry line shown names one of the query's words, whatever its case.
        assert "nccl" in pair.entry_text.lower() or "timeout" in pair.entry_text.lower()
    assert "title" in {pair.entry_field for pair in match.matched}

    found = by_slug(search_entries("optimizer"))
    assert "optimizer-state-oom" in found
    assert all(
        "optimizer" in pair.entry_text.lower() for pair in found["optimizer-state-oom"].matched
    )
    # Keywords in another case find the same entries.
    assert "nccl-timeout" in by_slug(search_entries("nccl TIMEOUT"))


def test_pasted_error_text_in_capitals_finds_the_entry_by_its_signature(catalogue: Any) -> None:
    found = by_slug(search_entries(OOM_PASTE))
    assert "activation-oom" in found
    match = found["activation-oom"]
    (pair,) = [p for p in match.matched if p.line == 2][:1]
    assert pair.text == OOM_PASTE.splitlines()[1]
    assert pair.entry_field == "signature"
    assert pair.entry_text.startswith("torch.OutOfMemoryError: CUDA out of memory.")
    # The healthy line above matched nothing.
    assert all(p.line != 1 for p in match.matched)


def test_a_fingerprint_match_names_the_fingerprint_and_the_pasted_line(catalogue: Any) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 606, in '
        "_multi_tensor_adamw\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 57.00 MiB is free.\n"
    )
    found = by_slug(search_entries(text))
    assert "optimizer-state-oom" in found
    pairs = found["optimizer-state-oom"].matched
    fingerprints = [p for p in pairs if p.entry_field.startswith("fingerprint ")]
    assert fingerprints
    for pair in fingerprints:
        assert text.splitlines()[pair.line - 1].startswith(pair.text[:40])
        assert pair.entry_text  # the fingerprint's pattern


def test_the_page_and_the_api_show_both_sides(catalogue: Any, client: Client) -> None:
    html = client.post("/encyclopedia/search/", {"text": "NCCL timeout"}).content.decode()
    assert 'href="/encyclopedia/nccl-timeout/"' in html
    assert "Matched in the entry" in html
    assert '<td class="num">1</td><td><code>NCCL timeout</code></td>' in html

    body = (
        APIClient().post("/api/v1/encyclopedia/search", {"text": OOM_PASTE}, format="json").json()
    )
    (result,) = [r for r in body["results"] if r["slug"] == "activation-oom"]
    assert {"line", "text", "entry_field", "entry_text"} <= set(result["matched"][0])
    assert result["matched"][0]["line"] == 2
