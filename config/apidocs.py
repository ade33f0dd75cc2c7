"""The API docs page: drf-spectacular's Redoc, served from this site alone under the CSP.

Redoc's bundle (drf-spectacular-sidecar) draws "API docs by Redocly" with a logo it loads from
Redocly's CDN, whatever its options say; the policy would refuse it and report a violation on
every visit. So the bundle is served here with that one address replaced by an empty image,
read once per process. Redoc writes <style> elements as it renders and runs its search in a
blob: worker: this page's policy adds those two, and nothing else.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import drf_spectacular_sidecar
from csp.decorators import csp_update
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET
from drf_spectacular.views import SpectacularRedocView

BUNDLE = Path(drf_spectacular_sidecar.__file__).parent / (
    "static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
)
THIRD_PARTY_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"


@cache
def _bundle() -> bytes:
    return BUNDLE.read_bytes().replace(THIRD_PARTY_LOGO, EMPTY_IMAGE)


@require_GET
def redoc_bundle(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response


class ApiDocsView(SpectacularRedocView):
    """Redoc with the bundle above (config/templates/drf_spectacular/redoc.html has no inline
    style and no third-party font)."""

    @staticmethod
    def _redoc_standalone() -> str:
        return reverse("api-docs-bundle")


api_docs = csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["'self'", "blob:"]})(
    ApiDocsView.as_view(url_name="api-schema")
)
