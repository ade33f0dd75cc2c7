"""The entries added to the taxonomy on 2026-12-01 are published from the shipped catalogue."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from django.test import Client
from msgspec import UnsetType

from rootcause.catalogue import load_entries

NEW = ["nccl-duplicate-gpu", "amp-fp16-params-unscale", "gpu-memory-held-elsewhere"]
NEW += ["loss-divergence", "setup-oom"]
ENTRIES = {e.slug: e for e in load_entries()}


def page_text(response: Any) -> str:
    """The page as a reader sees it: tags dropped (inline code is rendered), spaces collapsed."""
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", response.content.decode()))
    return " ".join(text.split())


def prose(text: str) -> str:
    return " ".join(text.replace("`", "").split())


@pytest.mark.parametrize("slug", NEW)
def test_new_entry_page_shows_its_own_text_and_links_its_neighbours(
    client: Client, catalogue: Any, bob: Any, slug: str
) -> None:
    entry = ENTRIES[slug]
    response = client.get(f"/encyclopedia/{slug}/")
    anonymous = page_text(response)
    assert entry.title in anonymous
    assert prose(entry.checklist[0]) in anonymous
    assert not isinstance(entry.faq, UnsetType)
    assert prose(entry.faq[0].q) in anonymous
    for related in entry.related:
        assert f'href="/encyclopedia/{related}/"' in response.content.decode()
    assert prose(entry.verification.command) not in anonymous  # signed-in only

    client.force_login(bob)
    signed_in = page_text(client.get(f"/encyclopedia/{slug}/"))
    assert prose(entry.verification.command) in signed_in
    assert prose(entry.fix.steps[0]) in signed_in


def test_index_lists_the_new_entries_under_their_categories(client: Client, catalogue: Any):
    page = client.get("/encyclopedia/").content.decode()
    for slug in NEW:
        assert f'href="/encyclopedia/{slug}/"' in page
