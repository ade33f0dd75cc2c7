"""DRF's content negotiation with its choices remembered (plumbing/negotiation.py): the same
renderer and media type as DRF's own, for any Accept header and format, every time."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from plumbing import negotiation
from plumbing.negotiation import RememberingContentNegotiation


class ProblemRenderer(JSONRenderer):
    media_type = "application/problem+json"


RENDERER_SETS = [
    (JSONRenderer, BrowsableAPIRenderer),
    (BrowsableAPIRenderer, JSONRenderer),
    (ProblemRenderer, JSONRenderer),
]
ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "text/html",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "application/*; q=0.5, text/*",
    "application/problem+json",
]


def _request(accept: str | None, query: str = "") -> Request:
    factory, path = APIRequestFactory(), f"/api/v1/diagnoses{query}"
    request = factory.get(path) if accept is None else factory.get(path, HTTP_ACCEPT=accept)
    return Request(request)


@pytest.mark.parametrize("classes", RENDERER_SETS)
@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("query", ["", "?format=json", "?format=api"])
def test_the_remembered_choice_is_drfs(
    classes: tuple[type[BaseRenderer], ...], accept: str | None, query: str
) -> None:
    negotiation._chosen.clear()
    for _ in range(2):  # worked out, then remembered
        renderers = [cls() for cls in classes]
        try:
            expected = DefaultContentNegotiation().select_renderer(
                _request(accept, query), renderers
            )
        except (NotAcceptable, Http404) as refused:  # 406, or 404 for a format none renders
            with pytest.raises(type(refused)):
                RememberingContentNegotiation().select_renderer(_request(accept, query), renderers)
            continue
        chosen = RememberingContentNegotiation().select_renderer(_request(accept, query), renderers)
        assert chosen[0] is expected[0]
        assert chosen[1] == expected[1]


def test_at_most_so_many_choices_are_remembered() -> None:
    negotiation._chosen.clear()
    renderers = [JSONRenderer()]
    for i in range(negotiation.CHOICES + 10):
        accept = f"application/json; v={i}"
        renderer, media_type = RememberingContentNegotiation().select_renderer(
            _request(accept), renderers
        )
        assert renderer is renderers[0]
        assert media_type == accept
    assert len(negotiation._chosen) == negotiation.CHOICES
