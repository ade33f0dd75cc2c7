"""/favicon.ico and /favicon.svg: the site's mark (config/mark/), cached for a day."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

MARK = Path(__file__).resolve().parent / "mark"


@cache
def _read(name: str) -> bytes:
    return (MARK / name).read_bytes()


def _served(name: str, content_type: str) -> HttpResponse:
    response = HttpResponse(_read(name), content_type=content_type)
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_GET
def favicon_ico(request: HttpRequest) -> HttpResponse:
    return _served("favicon.ico", "image/x-icon")


@require_GET
def favicon_svg(request: HttpRequest) -> HttpResponse:
    return _served("favicon.svg", "image/svg+xml")
