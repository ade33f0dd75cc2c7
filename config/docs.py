"""/api/v1/docs: drf-spectacular's Redoc page, served with everything from the service.

Redoc comes from drf-spectacular-sidecar (our static files) and the page's template leaves out
the third party's fonts (config/templates/drf_spectacular/redoc.html); Redoc's own bundle still
draws its maker's logo from their CDN, so the page's Content-Security-Policy lets it load
nothing from elsewhere (the browser never asks; the logo hides itself when it fails)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from drf_spectacular.views import SpectacularRedocView

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",  # the page's one inline Redoc.init
        "style-src 'self' 'unsafe-inline'",  # Redoc's styled components
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",  # Redoc's search index
    ]
)


class ApiDocsView(SpectacularRedocView):
    def get(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response: HttpResponse = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response
