"""Errors as RFC 9457 problem details: one domain error type and one DRF exception handler.

Every problem has a stable `type` URI (`PROBLEM_TYPE_BASE` + a slug, listed in docs/api.md), a
fixed `title` per type and a `detail` about this occurrence. The same shape answers a path under
/api/ that matches no endpoint, and an unhandled error there, instead of Django's HTML pages.
"""

from __future__ import annotations

import http
import logging
import sys
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.text import slugify
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
# An identifier, the same on every deployment, so clients may compare it; docs/api.md lists them.
PROBLEM_TYPE_BASE = "https://rootcause.dev/problems/"


def problem_type(slug: str) -> str:
    return PROBLEM_TYPE_BASE + slug


class ApplicationError(Exception):
    """A domain error the caller can act on; services raise it, the API renders it.

    Its problem type is `slug`, or else the title's slug ("Log rejected": `log-rejected`).
    """

    status_code: int = status.HTTP_400_BAD_REQUEST
    title: str = "Bad request"
    slug: str = ""

    def __init__(
        self,
        detail: str,
        *,
        # the body's fields beyond RFC 9457's, which callers (and tests) read back by key, nested
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra or {}
        # Response headers that belong to the error, e.g. Retry-After on a 429.
        self.headers = headers or {}

    @property
    def type_slug(self) -> str:
        # A machine-readable `error` in the body (billing_tiers' errors) names the type too.
        error = self.extra.get("error")
        if self.slug:
            return self.slug
        if isinstance(error, str) and error:
            return error.replace("_", "-")
        return slugify(self.title)


class PayloadTooLarge(ApplicationError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    title = "Payload too large"


class Conflict(ApplicationError):
    status_code = status.HTTP_409_CONFLICT
    title = "Conflict"


class Unprocessable(ApplicationError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    title = "Unprocessable request"


class ServiceUnavailable(ApplicationError):
    """PostgreSQL or Redis is away: nothing was kept or charged; the caller should retry."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    title = "Service unavailable"

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            detail
            or "A service we depend on is briefly unavailable; nothing was kept or charged. "
            "Try again in a few seconds.",
            headers={"Retry-After": str(settings.OUTAGE_RETRY_AFTER_SECONDS)},
        )


class UploadTimeout(ApplicationError):
    """The request body did not arrive in time (config/wsgi.py's deadline)."""

    status_code = status.HTTP_408_REQUEST_TIMEOUT
    title = "Upload timed out"


def outage_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean PostgreSQL or Redis is unavailable, not a bug of ours."""
    import redis
    from django.db import InterfaceError, OperationalError
    from kombu.exceptions import OperationalError as BrokerError

    return (
        OperationalError,
        InterfaceError,
        redis.ConnectionError,
        redis.TimeoutError,
        BrokerError,
    )


# DRF's exceptions by class: the type's slug and its fixed title. Their `default_detail` is no
# title: some are templates ('Method "{method}" not allowed.'); the formatted text is the detail.
DRF_PROBLEMS: dict[type[exceptions.APIException], tuple[str, str]] = {
    exceptions.ValidationError: ("invalid-request", "Invalid request"),
    exceptions.ParseError: ("malformed-request", "Malformed request"),
    exceptions.AuthenticationFailed: ("authentication-failed", "Authentication failed"),
    exceptions.NotAuthenticated: ("not-authenticated", "Not authenticated"),
    exceptions.PermissionDenied: ("permission-denied", "Permission denied"),
    exceptions.NotFound: ("not-found", "Not found"),
    exceptions.MethodNotAllowed: ("method-not-allowed", "Method not allowed"),
    exceptions.NotAcceptable: ("not-acceptable", "Not acceptable"),
    exceptions.UnsupportedMediaType: ("unsupported-media-type", "Unsupported media type"),
    exceptions.Throttled: ("throttled", "Too many requests"),
}


def _drf_problem(exc: exceptions.APIException, status_code: int) -> tuple[str, str]:
    for cls in type(exc).__mro__:
        if cls in DRF_PROBLEMS:
            return DRF_PROBLEMS[cls]
    phrase = http.HTTPStatus(status_code).phrase
    return slugify(phrase), phrase


def problem_body(
    status_code: int, slug: str, title: str, detail: object, extra: dict[str, object] | None = None
) -> dict[str, object]:
    body: dict[str, object] = {"type": problem_type(slug), "title": title, "status": status_code}
    if isinstance(detail, dict | list):
        # A validation error: a sentence for people, the errors by field for programs.
        body["detail"] = "The request is not valid; `errors` says where."
        body["errors"] = detail
    else:
        body["detail"] = str(detail) or title
    body.update(extra or {})
    return body


def problem_response(
    status_code: int,
    title: str,
    detail: object,
    extra: dict[str, object] | None = None,
    *,
    slug: str = "",
) -> Response:
    body = problem_body(status_code, slug or slugify(title), title, detail, extra)
    return Response(body, status=status_code, content_type=PROBLEM_CONTENT_TYPE)


def problem_exception_handler(exc: Exception, context: dict[str, object]) -> Response | None:
    if isinstance(exc, outage_errors()):
        # Only the type: a driver's message may name hosts and users.
        logger.warning("dependency unavailable: %s", type(exc).__name__)
        exc = ServiceUnavailable()
    if isinstance(exc, ApplicationError):
        problem = problem_response(
            exc.status_code, exc.title, exc.detail, exc.extra, slug=exc.type_slug
        )
        for header, value in exc.headers.items():
            problem[header] = value
        return problem
    # Imported here: rest_framework.views loads the authentication classes (accounts), which
    # import this module's ApplicationError; a module-level import would close that cycle.
    from rest_framework.views import exception_handler

    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    slug, title = _drf_problem(exc, response.status_code)
    # DRF gives {"detail": "..."} (already formatted) for most errors, {field: [...]} for
    # validation errors.
    data = response.data
    detail = data["detail"] if isinstance(data, dict) and "detail" in data else data
    problem = problem_response(response.status_code, title, detail, slug=slug)
    for header, value in response.items():
        if header.lower() in ("www-authenticate", "retry-after", "allow"):
            problem[header] = value
    return problem


# --- Outside DRF: URLs that match no endpoint, unhandled errors -----------------------------


def _problem_page(status_code: int, slug: str, title: str, detail: str) -> HttpResponse:
    return JsonResponse(
        problem_body(status_code, slug, title, detail),
        status=status_code,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def error_page(error: ApplicationError) -> HttpResponse:
    """An ApplicationError answered outside DRF (a middleware), with its headers."""
    response = _problem_page(error.status_code, error.type_slug, error.title, error.detail)
    for header, value in error.headers.items():
        response[header] = value
    return response


def problem_page(status_code: int, slug: str, title: str, detail: str) -> HttpResponse:
    """A problem+json answer from a plain Django view (not DRF's)."""
    return _problem_page(status_code, slug, title, detail)


@csrf_exempt
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    """Any path under /api/ that no endpoint matches (a malformed id too), whatever the method."""
    return _problem_page(
        404,
        "not-found",
        "Not found",
        "No API endpoint has this address; the endpoints are listed at /api/v1/docs.",
    )


def outage_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: problem+json under /api/, a short page elsewhere."""
    unavailable = ServiceUnavailable()
    if request.path.startswith("/api/"):
        response = _problem_page(503, "service-unavailable", unavailable.title, unavailable.detail)
    else:
        response = HttpResponse(
            "<!doctype html><title>Briefly unavailable</title><h1>Briefly unavailable</h1>"
            f"<p>{unavailable.detail}</p>",
            status=503,
        )
    for header, value in unavailable.headers.items():
        response[header] = value
    return response


class OutageMiddleware:
    """PostgreSQL or Redis unavailable during a view (a view, DRF's authentication, a page): 503
    with Retry-After rather than a 500, whatever DEBUG says. Errors outside views reach
    handler500 (`server_error`), which answers the same. An upload past its deadline
    (config/wsgi.py) is a 408."""

    # Django's next handler in the chain, called as it is given (tests give one that returns None)
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, outage_errors()):
            logger.warning("dependency unavailable: %s", type(exception).__name__)
            return outage_response(request)
        if isinstance(exception, UploadTimeout):
            # A page's upload (an API view answers it itself, through the exception handler).
            return _problem_page(408, exception.type_slug, exception.title, exception.detail)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: problem+json under /api/, Django's page elsewhere; 503 for an outage."""
    if isinstance(sys.exc_info()[1], outage_errors()):
        return outage_response(request)
    if request.path.startswith("/api/"):
        return _problem_page(
            500,
            "server-error",
            "Internal server error",
            "Something went wrong on our side; it has been logged.",
        )
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request)


# --- The OpenAPI document -------------------------------------------------------------------


PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


# drf-spectacular's OpenAPI document as nested dicts, edited in place by key: a JSON union would
# need a cast at every step, and the hook's keyword arguments are spectacular's to choose.
def problem_responses_hook(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing: every error response of every operation is problem+json
    (the Problem component), and a `default` response says so for statuses not listed."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    # Set, not defaulted: an app's own ProblemSerializer (the encyclopedia's) describes the same
    # body less exactly.
    schemas["Problem"] = {
        "type": "object",
        "description": "The body of every error: RFC 9457 problem details.",
        "properties": {
            "type": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "errors": {"description": "Invalid requests only: the messages by field."},
        },
        "required": ["type", "title", "status", "detail"],
        # Some problems carry more: a 429's quota fields, billing errors' `error`.
        "additionalProperties": True,
    }
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code, response in responses.items():
                if code.isdigit() and int(code) >= 400:
                    schema = _problem_schema_of(response.get("content", {}))
                    response["content"] = {PROBLEM_CONTENT_TYPE: {"schema": schema}}
            responses.setdefault(
                "default",
                {
                    "description": "An error not listed above, as problem+json.",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}},
                },
            )
    return result


def _problem_schema_of(content: dict[str, Any]) -> dict[str, Any]:  # spectacular's, as above
    """A problem schema an operation declared itself (a subtype of Problem), or Problem."""
    for media in content.values():
        schema = media.get("schema")
        if isinstance(schema, dict) and schema.get("$ref", "").endswith("Problem"):
            return dict(schema)
    return PROBLEM_REF
