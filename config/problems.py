"""Errors as RFC 9457 problem details: one domain error type and one DRF exception handler."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

PROBLEM_CONTENT_TYPE = "application/problem+json"


class ApplicationError(Exception):
    """A domain error the caller can act on; services raise it, the API renders it."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    title: str = "Bad request"

    def __init__(
        self,
        detail: str,
        *,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra or {}
        # Response headers that belong to the error, e.g. Retry-After on a 429.
        self.headers = headers or {}


class PayloadTooLarge(ApplicationError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    title = "Payload too large"


class Conflict(ApplicationError):
    status_code = status.HTTP_409_CONFLICT
    title = "Conflict"


def problem_response(
    status_code: int, title: str, detail: Any, extra: dict[str, Any] | None = None
) -> Response:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status_code}
    if isinstance(detail, dict | list):
        body["detail"] = title
        body["errors"] = detail
    else:
        body["detail"] = str(detail)
    body.update(extra or {})
    return Response(body, status=status_code, content_type=PROBLEM_CONTENT_TYPE)


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        problem = problem_response(exc.status_code, exc.title, exc.detail, exc.extra)
        for header, value in exc.headers.items():
            problem[header] = value
        return problem
    # Imported here: rest_framework.views loads the authentication classes (accounts), which
    # import this module's ApplicationError; a module-level import would close that cycle.
    from rest_framework.views import exception_handler

    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    title = str(exc.default_detail) if exc.default_detail else "Error"
    # DRF gives {"detail": "..."} for most errors and {field: [...]} for validation errors.
    data = response.data
    detail = data["detail"] if isinstance(data, dict) and "detail" in data else data
    problem = problem_response(response.status_code, title, detail)
    for header, value in response.items():
        if header.lower() in ("www-authenticate", "retry-after", "allow"):
            problem[header] = value
    return problem
