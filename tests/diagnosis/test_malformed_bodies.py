"""Bodies that are not what the schema says answer 400 problem+json, before anything is charged:
a log that is not a string, a JSON document nested too deeply, chunks the server cannot decode."""

from __future__ import annotations

import io
from typing import Any

import pytest
from gunicorn.http.body import ChunkedReader  # type: ignore[import-untyped]  # no types
from gunicorn.http.unreader import IterUnreader  # type: ignore[import-untyped]

from billing_tiers.models import QuotaUsage
from plumbing.problems import PROBLEM_CONTENT_TYPE

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _problem(response: Any, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.content[:400]
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    body: dict[str, Any] = response.json()
    return body


def _used() -> int:
    return sum(QuotaUsage.objects.values_list("used", flat=True))


@pytest.mark.parametrize("log", [0, 1.5, True, None, [], ["a"], {"text": "x"}])
def test_a_log_that_is_not_a_string_is_refused_and_not_charged(acme_api: Any, log: Any) -> None:
    problem = _problem(acme_api.post(URL, {"log": log}, format="json"))

    assert problem["type"].endswith("/invalid-request")
    assert "log" in problem["errors"]
    assert _used() == 0


@pytest.mark.parametrize("field", ["filename", "job", "commit", "run_url"])
def test_metadata_that_is_not_a_string_is_refused(acme_api: Any, field: str) -> None:
    problem = _problem(acme_api.post(URL, {"log": "loss nan\n", field: 7}, format="json"))
    assert field in problem["errors"]
    assert _used() == 0


def test_labels_must_be_strings(acme_api: Any) -> None:
    problem = _problem(acme_api.post(URL, {"log": "x\n", "labels": [1, 2]}, format="json"))
    assert "labels" in problem["errors"]


@pytest.mark.parametrize("path", [URL, "/api/v1/tokens", "/api/v1/encyclopedia/search"])
def test_a_json_document_nested_too_deeply_is_malformed_not_a_server_error(
    acme_api: Any, path: str
) -> None:
    for body in ("[" * 200_000, '{"log": ' + "[" * 100_000, '{"a":' * 50_000):
        problem = _problem(acme_api.generic("POST", path, body, content_type="application/json"))
        assert problem["type"].endswith("/malformed-request")
    assert _used() == 0


def _gunicorn_chunked(wire: bytes) -> io.BufferedReader:
    """wsgi.input as gunicorn builds it for `Transfer-Encoding: chunked`: its ChunkedReader over
    the bytes on the wire, decoding (and failing) as the application reads."""

    class Request:  # what the reader asks of gunicorn's request: its trailers go here
        trailers: list[tuple[str, str]] = []

    class Body(io.RawIOBase):
        def __init__(self) -> None:
            self.reader = ChunkedReader(Request(), IterUnreader([wire]))

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            data = self.reader.read(len(buffer))
            buffer[: len(data)] = data
            return len(data)

    return io.BufferedReader(Body())


@pytest.mark.parametrize(
    "wire",
    [
        b"zz\r\nloss nan\r\n0\r\n\r\n",  # a chunk size that is no number
        b"5\r\nloss nan and more\r\n0\r\n\r\n",  # a chunk longer than its size
        b"ffff\r\nloss",  # the connection closed inside a chunk
    ],
    ids=["size", "terminator", "cut"],
)
def test_chunks_the_server_cannot_decode_are_a_400(acme_api: Any, wire: bytes) -> None:
    environ = {
        "CONTENT_LENGTH": "",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": _gunicorn_chunked(wire),
        "wsgi.input_terminated": True,
    }
    response = acme_api.generic("POST", URL, b"", content_type="text/plain", **environ)

    assert "malformed" in _problem(response)["detail"]
    assert _used() == 0
