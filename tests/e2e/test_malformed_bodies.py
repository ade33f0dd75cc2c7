"""Malformed bodies through the web process as deployed (gunicorn, gunicorn.conf.py): a chunked
body whose chunks gunicorn cannot decode and a JSON document nested too deeply answer 400
problem+json, not 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import stack
from tests.worker import worker_environment

pytestmark = pytest.mark.e2e


@pytest.fixture
def web(tmp_path: Path, transactional_db: Any) -> Iterator[tuple[str, int]]:
    env = worker_environment(GUNICORN_WORKERS="1", UPLOAD_IDLE_SECONDS="5")
    port = stack.free_port()
    process = stack.gunicorn(env, tmp_path / "web.log", port)
    process.start()
    try:
        stack.wait_until_serving(f"http://127.0.0.1:{port}", process)
        yield "127.0.0.1", port
    finally:
        process.stop()


def _exchange(address: tuple[str, int], request: bytes) -> tuple[int, dict[str, str], Any]:
    """Sends `request` as it is, reads the answer to the end (the server closes the connection
    of a request it could not read whole)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    length = int(headers.get("Content-Length", len(body)))
    return int(lines[0].split()[1]), headers, json.loads(body[:length] or b"null")


def _post(content_type: str, framing: str, body: bytes) -> bytes:
    return (
        f"POST /api/v1/diagnoses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"{framing}\r\nConnection: close\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize(
    "chunks",
    [b"zz\r\nloss nan\r\n0\r\n\r\n", b"5\r\nloss nan and more\r\n0\r\n\r\n"],
    ids=["size", "terminator"],
)
def test_a_chunked_body_with_a_bad_chunk_is_400(web, chunks):
    status, headers, problem = _exchange(
        web, _post("text/plain", "Transfer-Encoding: chunked", chunks)
    )

    assert status == 400, problem
    assert headers["Content-Type"] == "application/problem+json"
    assert "malformed" in problem["detail"]


def test_a_json_document_nested_too_deeply_is_400(web):
    body = b"[" * 200_000
    status, headers, problem = _exchange(
        web, _post("application/json", f"Content-Length: {len(body)}", body)
    )

    assert status == 400, problem
    assert headers["Content-Type"] == "application/problem+json"
    assert problem["type"].endswith("/malformed-request")


def test_a_good_chunked_body_is_still_taken(web):
    log = b"torch.OutOfMemoryError: CUDA out of memory.\n"
    chunks = b"%x\r\n%s\r\n0\r\n\r\n" % (len(log), log)
    status, _, answer = _exchange(web, _post("text/plain", "Transfer-Encoding: chunked", chunks))

    assert status == 202, answer
    assert answer["size_bytes"] == len(log)
