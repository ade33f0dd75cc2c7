"""django-csp's middleware with the header built once, not for every answer.

django-csp builds the Content-Security-Policy header from CONTENT_SECURITY_POLICY on each
response (the middleware: about 40 µs of CPU an answer, this one 7-13 µs; docs/benchmarks.md),
though it only changes when a view asks for another policy (`csp_update`, `csp_replace`,
`csp_exempt`: the API docs page) or a page uses a nonce. Those answers (and all of them when a
report-only policy or excluded prefixes are set, and DEBUG's error pages) go through django-csp
as before; every other one gets the header built from the settings' policy the first time it was
seen (tests/config/test_csp.py compares the two).
"""

from __future__ import annotations

from csp.constants import HEADER
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

# Set on a response by django-csp's decorators: the policy is the answer's own.
_OWN_POLICY = ("_csp_config", "_csp_update", "_csp_replace", "_csp_exempt")


class CSPMiddleware(DjangoCSPMiddleware):
    # The settings' policy object the header was built from (held, so never another one at the
    # same address), and the header.
    _built: tuple[object, str] | None = None

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
        if (
            getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
            or (settings.DEBUG and response.status_code in (404, 500))  # django-csp's own
            or not policy
            or policy.get("EXCLUDE_URL_PREFIXES")
            or getattr(request, "_csp_nonce", None) is not None
            or any(hasattr(response, name) for name in _OWN_POLICY)
            or HEADER in response
        ):
            return super().process_response(request, response)
        built = self._built
        if built is None or built[0] is not policy:
            built = (policy, build_policy())
            self._built = built
        response[HEADER] = built[1]
        # As django-csp does once the header is written: a nonce asked for later is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
