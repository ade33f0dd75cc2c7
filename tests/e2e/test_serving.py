"""The web process as deployed (gunicorn.conf.py) against slow clients: four clients sending one
byte a second do not stall /healthz, and headers or a body that come too slowly are answered 408
problem+json (docs/operations.md)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e import stack
from tests.worker import worker_environment

pytestmark = pytest.mark.e2e


@pytest.fixture
def web(tmp_path: Path, transactional_db: Any) -> Iterator[str]:
    env = worker_environment(
        GUNICORN_WORKERS="1",
        GUNICORN_HEADER_TIMEOUT="3",
        UPLOAD_IDLE_SECONDS="2",
        UPLOAD_TIMEOUT_SECONDS="5",
    )
    port = stack.free_port()
    process = stack.gunicorn(env, tmp_path / "web.log", port)
    process.start()
    base = f"http://127.0.0.1:{port}"
    try:
        stack.wait_until_serving(base, process)
        yield base
    finally:
        process.stop()


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body or b"{}")


HEAD = b"POST /api/v1/diagnoses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"


def test_four_clients_trickling_one_byte_a_second_do_not_stall_healthz(web):
    stop = threading.Event()

    def trickle(data: bytes) -> None:
        with _connect(web) as sock:
            for byte in data:
                if stop.is_set():
                    return
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    return
                time.sleep(1)

    body = HEAD + b"Content-Length: 1000\r\n\r\n" + b"x" * 1000
    clients = [threading.Thread(target=trickle, args=(body,), daemon=True) for _ in range(4)]
    for client in clients:
        client.start()
    try:
        time.sleep(1.5)  # every trickler has a connection and is sending
        answers = [httpx.get(f"{web}/healthz", timeout=10).status_code for _ in range(5)]
    finally:
        stop.set()

    # With sync workers each trickler held a whole process and /healthz waited for them.
    assert answers == [200] * 5


def _trickle_headers(sock: socket.socket) -> None:
    """Headers that never finish: one byte every half second, until the server cuts the
    connection or 10 s have passed."""
    started = time.monotonic()
    for byte in HEAD:
        try:
            sock.send(bytes([byte]))
        except OSError:
            return
        time.sleep(0.5)
        if time.monotonic() - started > 10:
            return


def test_headers_that_come_too_slowly_are_answered_408(web):
    with _connect(web) as sock:
        started = time.monotonic()
        _trickle_headers(sock)
        status, problem = _answer(sock)

    assert status == 408
    assert problem["type"].endswith("/request-timed-out")
    assert time.monotonic() - started < 10  # cut off at GUNICORN_HEADER_TIMEOUT, not later


def test_a_body_that_stops_coming_is_answered_408(web):
    with _connect(web) as sock:
        sock.sendall(HEAD + b"Content-Length: 100000\r\n\r\n" + b"step 1 loss 2.0\n" * 100)
        status, problem = _answer(sock)  # and nothing more is sent

    assert status == 408
    assert problem["type"].endswith("/upload-timed-out")
    assert "did not arrive" in problem["detail"]


def test_a_body_trickled_a_kilobyte_a_second_is_answered_408_at_the_upload_deadline(web):
    """Never idle for UPLOAD_IDLE_SECONDS, so only the overall deadline (5 s here) can stop it:
    it was checked between 1 MiB reads of the application, and such a body got no answer at
    420 s with a deadline of 300."""
    with _connect(web) as sock:
        sock.sendall(HEAD + b"Content-Length: 1000000\r\n\r\n" + b"step 1 loss 2.0\n" * 10)
        started = time.monotonic()
        stop = threading.Event()

        def trickle() -> None:
            while not stop.is_set() and time.monotonic() - started < 30:
                try:
                    sock.send(b"x" * 100)
                except OSError:
                    return
                time.sleep(0.1)

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            status, problem = _answer(sock)
        finally:
            stop.set()
            sender.join()
        elapsed = time.monotonic() - started

    assert status == 408
    assert problem["type"].endswith("/upload-timed-out")
    assert 4 < elapsed < 8, elapsed  # at UPLOAD_TIMEOUT_SECONDS, not at the first idle second


def test_a_kept_alive_connection_serves_many_requests_and_keeps_the_header_deadline(web):
    """gthread initialises a connection again for each of its requests; the deadline's wrapper
    once grew with each, and the ~1000th request on one connection was a 500."""
    host, port = web.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.connect()
    sock = conn.sock
    statuses = set()
    for _ in range(1200):
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        statuses.add(response.status)
    assert statuses == {200}
    assert conn.sock is sock  # one connection throughout

    # Still bounded: headers trickled on the same connection are cut off.
    _trickle_headers(sock)
    status, problem = _answer(sock)
    conn.close()

    assert status == 408
    assert problem["type"].endswith("/request-timed-out")
