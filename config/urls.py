from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from config import apidocs, favicon, health
from plumbing import problems

# An unhandled error under /api/ answers problem+json too.
handler500 = "plumbing.problems.server_error"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", favicon.favicon_ico, name="favicon"),
    path("favicon.svg", favicon.favicon_svg, name="favicon-svg"),
    # Submissions and polls, the hot paths, before the rest: a request tries the patterns in
    # order, and some twenty came before these (about 1 % of a submission's CPU). None of the
    # patterns above or below overlaps theirs, so the order changes no match.
    path("api/v1/", include("diagnosis.urls_api")),
    # Prometheus, for operators: no tenant data in it (diagnosis/metrics.py).
    path("", include("diagnosis.urls_metrics")),
    path("admin/", admin.site.urls),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    # Redoc, from this site alone under the Content-Security-Policy (config/apidocs.py).
    path("api/v1/docs", apidocs.api_docs, name="api-docs"),
    path("api/v1/docs/redoc.js", apidocs.redoc_bundle, name="api-docs-bundle"),
    # Before accounts: billing_tiers' /me extends accounts' with the tier and the quota.
    path("api/v1/", include("billing_tiers.urls_api")),
    path("api/v1/", include("accounts.urls_api")),
    path("api/v1/", include("questions.urls_api")),
    path("api/v1/", include("feedback.urls_api")),
    path("api/v1/", include("alerts.urls_api")),
    path("api/v1/", include("encyclopedia.urls_api")),
    # Anything else under /api/ (a malformed id too) is a problem+json 404, not an HTML page.
    re_path(r"^api(/|$)", problems.api_not_found),
    path("encyclopedia/", include("encyclopedia.urls")),
    # The client wheel and the editor extension, served by the service (encyclopedia/downloads.py).
    path("downloads/", include("encyclopedia.urls_downloads")),
    path("evaluation/", include("billing_tiers.urls")),
    # /accounts/… (sign-up, sign-in, verification, invitations) and /settings/…
    path("", include("accounts.urls")),
    path("", include("diagnosis.urls")),
    path("", include("questions.urls")),
    path("", include("feedback.urls")),
    path("", include("alerts.urls")),
]
