"""The pages' finish, read from the HTML: every element id once per page (labels point at the
right field), the header's History link and mark, /favicon.ico, a styled 403 page, form errors
named by their labels, and an API docs page that loads nothing from a third party."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.test import Client

from accounts.models import Membership
from tests.pages import signed_in

pytestmark = pytest.mark.django_db

ID = re.compile(r'\sid="([^"]+)"')
FOR = re.compile(r'\sfor="([^"]+)"')


def duplicate_ids(html: str) -> list[str]:
    return [name for name, n in Counter(ID.findall(html)).items() if n > 1]


def labels_without_a_target(html: str) -> list[str]:
    ids = set(ID.findall(html))
    return [target for target in FOR.findall(html) if target not in ids]


@pytest.mark.parametrize(
    "path",
    ["/settings/", "/settings/alerts/", "/settings/account/", "/diagnoses/", "/evaluation/", "/"],
)
def test_each_id_once_and_every_label_points_at_a_field(acme_scale, alice, path):
    html = signed_in(alice).get(path).content.decode()

    assert duplicate_ids(html) == []
    assert labels_without_a_target(html) == []


def test_the_header_has_the_history_and_the_mark(alice, acme):
    html = signed_in(alice).get("/settings/").content.decode()

    assert '<a href="/diagnoses/">History</a>' in html
    assert 'class="mark"' in html
    assert 'rel="icon" href="/favicon.svg"' in html
    assert '<a href="/diagnoses/"' not in Client().get("/").content.decode()  # visitors: none


def test_the_favicon_is_an_icon(client):
    ico = client.get("/favicon.ico")
    svg = client.get("/favicon.svg")

    assert ico.status_code == svg.status_code == 200
    assert ico["Content-Type"] == "image/x-icon"
    assert ico.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert svg["Content-Type"] == "image/svg+xml"
    assert "max-age" in ico["Cache-Control"]


def test_a_403_page_has_the_sites_look_and_says_why(alice, acme, bob):
    Membership.objects.filter(user=bob).update(role="member")

    refused = signed_in(bob).get("/settings/organization/delete/")

    assert refused.status_code == 403
    html = refused.content.decode()
    assert '<nav aria-label="Main">' in html
    assert 'id="forbidden-reason"' in html
    assert "owner" in html


def test_form_errors_are_named_by_their_labels(alice, acme):
    html = signed_in(alice).get("/diagnoses/", {"created_after": "yesterday"}).content.decode()

    assert "On or after:" in html
    assert "created_after:" not in html


def test_the_api_docs_load_nothing_from_elsewhere(client):
    docs = client.get("/api/v1/docs")
    html = docs.content.decode()

    assert "img-src 'self' data:" in docs["Content-Security-Policy"]  # Redoc's CDN logo

    assert "fonts.googleapis" not in html
    assert "fonts.gstatic" not in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources
    assert all(not s.startswith(("http:", "https:", "//")) for s in sources), sources
