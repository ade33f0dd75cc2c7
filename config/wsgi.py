"""The WSGI application, with a deadline on reading the request body.

gunicorn's threads read a body as the application asks for it, with no limit of their own: a
client trickling its upload would hold a thread for as long as it liked. The web process's worker
(plumbing/serving.py) bounds each socket read of the body: UPLOAD_TIMEOUT_SECONDS after the
headers in all, UPLOAD_IDLE_SECONDS between bytes. Each recv() is bounded, not each read of the
application, which may take many: a body trickled a kilobyte a second passed every check made
between 1 MiB reads. A read that times out, or one that starts past the deadline, raises
`UploadTimeout` here, answered 408 problem+json, and the connection is closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeVar

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

T = TypeVar("T")
# PEP 3333's start_response(status, headers, exc_info=None), whose result is never used here
StartResponse = Callable[..., object]


class DeadlineInput:
    """``wsgi.input`` whose reads fail with UploadTimeout past the deadline, or when the
    server's socket read timed out (plumbing/serving.py sets its timeout before each recv)."""

    def __init__(self, stream: BinaryIO, deadline: float) -> None:
        self.stream = stream
        self.deadline = deadline

    def _call(self, method: Callable[[int], T], size: int) -> T:
        from plumbing.problems import UploadTimeout

        if self.deadline - time.monotonic() <= 0:
            raise UploadTimeout(_late_message())
        try:
            return method(size)
        except TimeoutError:
            raise UploadTimeout(_late_message()) from None

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._call(self.stream.read, size)
        return data

    def readline(self, size: int = -1) -> bytes:
        line: bytes = self._call(self.stream.readline, size)
        return line

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines: list[bytes] = self._call(self.stream.readlines, hint)
        return lines

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line


def _late_message() -> str:
    from django.conf import settings

    return (
        f"The upload did not arrive within {settings.UPLOAD_TIMEOUT_SECONDS} s, or paused for "
        f"more than {settings.UPLOAD_IDLE_SECONDS} s; send it again over a faster connection, or "
        "compress it (gzip is accepted)."
    )


def with_upload_deadline(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    # PEP 3333's environ: values of every kind, read by key (the input stream, the socket)
    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        from django.conf import settings

        environ["wsgi.input"] = DeadlineInput(
            environ["wsgi.input"], time.monotonic() + settings.UPLOAD_TIMEOUT_SECONDS
        )
        return app(environ, start_response)

    return wrapped


application = with_upload_deadline(get_wsgi_application())
