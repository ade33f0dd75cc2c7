"""Request bodies that the application holds in memory, bounded before a byte of them is read.

A raw log is streamed into Redis as it arrives (diagnosis/intake.py), but a parsed body is held
whole, and more than once: a JSON document is read as bytes, decoded to a str, parsed into another
(a 102 MB `{"log": "😀…"}` took a web process from 181 to 740 MB), and a form's file is kept in
memory (no raw log goes to a disk). So, in this middleware, before the view reads anything:

- a JSON body over JSON_MAX_BODY_BYTES is refused with 413 problem+json, which names the forms
  that take a log of any size (the raw body, a multipart `file`);
- a form (multipart, or urlencoded but to STREAMED_BODY_PATHS, where such a body is a raw log)
  of BUFFERED_BODY_MIN_BYTES or more, or of unknown length,
  takes one of BUFFERED_BODIES_PER_PROCESS slots of this process while it is served; with none
  free the answer is 503 with Retry-After (another process, or this one a moment later, takes it).

One process then holds at most that many large bodies at once, whatever the clients send.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from plumbing.concurrency import ProcessBusy, ProcessSlots
from plumbing.problems import ApplicationError, PayloadTooLarge, error_page

BUSY_RETRY_AFTER_SECONDS = 5

BUFFERED = ProcessSlots()


def _length(request: HttpRequest) -> int | None:
    """The declared body length; None when it is not known beforehand (chunked)."""
    declared = str(request.META.get("CONTENT_LENGTH") or "")
    if declared.isdigit():
        return int(declared)
    if "chunked" in str(request.META.get("HTTP_TRANSFER_ENCODING", "")).lower():
        return None
    return 0


def _buffered(request: HttpRequest, media_type: str) -> bool:
    """Whether the body is parsed into memory: a form, but for an urlencoded body sent to a path
    that streams it as a raw log (curl's --data-binary sends that content type)."""
    if media_type == "multipart/form-data":
        return True
    return media_type == "application/x-www-form-urlencoded" and (
        request.path not in settings.STREAMED_BODY_PATHS
    )


def _json_too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"A JSON body may be at most {limit} bytes: it is held in memory to be parsed. Send a "
        "larger log as the raw request body (Content-Type: text/plain or "
        "application/octet-stream, gzip accepted, metadata in X-Rootcause-* headers) or as the "
        "`file` field of a multipart/form-data form; both take a log up to the upload limit."
    )


class BodyMemoryMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        media_type = (request.content_type or "").lower()
        length = _length(request)
        if media_type == "application/json" or media_type.endswith("+json"):
            limit = settings.JSON_MAX_BODY_BYTES
            if length is None or length > limit:
                return self._refuse(request, _json_too_large(limit))
        elif _buffered(request, media_type) and (
            length is None or length >= settings.BUFFERED_BODY_MIN_BYTES
        ):
            with BUFFERED.take(settings.BUFFERED_BODIES_PER_PROCESS) as taken:
                if taken:
                    return self.get_response(request)
            busy = ProcessBusy(
                "This server is reading as many large forms as it may hold at once; try again "
                f"in {BUSY_RETRY_AFTER_SECONDS} s, or send the log as the raw request body, "
                "which is streamed.",
                retry_after=BUSY_RETRY_AFTER_SECONDS,
            )
            return self._refuse(request, busy)
        return self.get_response(request)

    @staticmethod
    def _refuse(request: HttpRequest, error: ApplicationError) -> HttpResponse:
        if request.path.startswith("/api/"):
            return error_page(error)
        response = HttpResponse(error.detail, status=error.status_code, content_type="text/plain")
        for header, value in error.headers.items():
            response[header] = value
        return response
