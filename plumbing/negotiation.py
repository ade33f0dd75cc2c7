"""DRF's content negotiation with its choices remembered: the renderer for an Accept header, a
format and a view's renderers is worked out once per process, not on every request (parsing the
header and matching it against each renderer was about 1 % of a submission's CPU, whose
clients send the same few headers).

The choice is a pure function of those three, so the remembered one is the one DRF makes; a
request DRF refuses (406) is refused the same way each time, and not remembered. At most
CHOICES are kept: an Accept header is the client's to write.
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

CHOICES = 256

# (format, Accept header, the renderers' classes) -> (the chosen renderer's index, media type)
_Key = tuple[str | None, str, tuple[type[BaseRenderer], ...]]
_chosen: dict[_Key, tuple[int, str]] = {}


class RememberingContentNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self,
        request: Request,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)
        format = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        key = (format, request.META.get("HTTP_ACCEPT", "*/*"), tuple(map(type, renderers)))
        found = _chosen.get(key)
        if found is not None:
            index, media_type = found
            return renderers[index], media_type
        renderer, media_type = super().select_renderer(request, renderers, format_suffix)
        if len(_chosen) < CHOICES:
            _chosen[key] = (renderers.index(renderer), media_type)
        return renderer, media_type
