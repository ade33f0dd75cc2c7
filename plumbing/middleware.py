"""One log line per request, tagged with a request id that also tags every line logged meanwhile."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

logger = logging.getLogger("rootcause.request")

_request_id: ContextVar[str] = ContextVar("request_id", default="-")
# Accept a caller's id only when it is short and plain, so it cannot forge or break log lines.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


# URL arguments that are secrets (a password-reset or verification link): logged as "<redacted>".
SECRET_URL_KWARGS = frozenset({"token", "uidb64"})


def loggable_path(request: HttpRequest) -> str:
    """The request path with secret URL arguments redacted; never the query string."""
    path = request.path
    match = request.resolver_match
    if match is not None:
        for name, value in match.kwargs.items():
            if name in SECRET_URL_KWARGS and isinstance(value, str) and value:
                path = path.replace(value, "<redacted>")
    return path


def current_request_id() -> str:
    return _request_id.get()


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _VALID_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            # The path only, never the query string, and without secret URL arguments.
            path = loggable_path(request)
            logger.info(
                "%s %s %s %.1fms",
                request.method,
                path,
                response.status_code,
                (time.perf_counter() - started) * 1000,
                extra={
                    "method": request.method,
                    "path": path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            return response
        finally:
            _request_id.reset(token)
