"""Thirty clients trickling their uploads and thirty long polls of one token at once, against a
real gunicorn with the repository's gunicorn.conf.py: /healthz answers within a second, a normal
submission goes through, and every slow request is answered (429 past its client's bound, 408 at
the upload deadline, 200 when its wait ends). Once 30 long polls left requests unanswered at 90 s
and a /healthz that took 40 s (docs/operations.md, "Slow and greedy clients")."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.diagnosis.logs import OOM_LOG
from tests.e2e import stack
from tests.worker import worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UPLOAD_SECONDS = 15
WAIT_SECONDS = 15
SLOW_CLIENTS = 30


def _serve(tmp_path: Path, **overrides: str) -> Iterator[str]:
    env = worker_environment(**overrides)
    port = stack.free_port()
    process = stack.gunicorn(env, tmp_path / "web.log", port)
    process.start()
    base = f"http://127.0.0.1:{port}"
    try:
        stack.wait_until_serving(base, process, timeout=120)  # a loaded machine boots slowly
        yield base
    finally:
        process.stop()


@pytest.fixture
def web(tmp_path: Path, transactional_db: Any) -> Iterator[str]:
    yield from _serve(
        tmp_path,
        GUNICORN_WORKERS="2",
        GUNICORN_THREADS="8",
        UPLOAD_TIMEOUT_SECONDS=str(UPLOAD_SECONDS),
        UPLOAD_IDLE_SECONDS="10",
        CONCURRENT_UPLOADS_PER_ADDRESS="4",
        CONCURRENT_WAITS_PER_TOKEN="4",
        WAITS_PER_PROCESS="3",
        # The normal client comes through "the proxy" from another address.
        TRUSTED_PROXY_COUNT="1",
        THROTTLE_SUBMISSIONS_PER_ADDRESS="1000/minute",
    )


@pytest.fixture
def two_threads(tmp_path: Path, transactional_db: Any) -> Iterator[str]:
    """One process of two threads, both of which long polls may hold."""
    yield from _serve(
        tmp_path,
        GUNICORN_WORKERS="1",
        GUNICORN_THREADS="2",
        WAITS_PER_PROCESS="2",
        CONCURRENT_WAITS_PER_TOKEN="2",
    )


def _trickle(base: str, outcome: list[int], stop: threading.Event) -> None:
    """A visitor's upload of 1 MB announced, sent 100 bytes every 0.1 s; the status it got."""
    host, port = base.removeprefix("http://").split(":")
    head = (
        b"POST /api/v1/diagnoses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 1000000\r\n\r\n" + b"step 1 loss 2.0\n" * 10
    )
    with socket.create_connection((host, int(port)), timeout=UPLOAD_SECONDS + 20) as sock:
        sock.sendall(head)
        sock.settimeout(0.1)
        received = b""
        while not stop.is_set():
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
                if b"\r\n\r\n" in received:
                    break
            except TimeoutError:
                pass
            except OSError:
                break
            try:
                sock.send(b"x" * 100)
            except OSError:
                sock.settimeout(5)  # refused: the answer is on its way or already read
        outcome.append(int(received.split()[1]) if received.startswith(b"HTTP/") else 0)


def _long_poll(location: str, token: str, outcome: list[tuple[int, float]]) -> None:
    started = time.monotonic()
    response = httpx.get(
        f"{location}?wait={WAIT_SECONDS}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=WAIT_SECONDS + 20,
    )
    if response.status_code == 429:
        assert int(response.headers["Retry-After"]) > 0
        assert json.loads(response.text)["type"].endswith("/too-many-concurrent-requests")
    outcome.append((response.status_code, time.monotonic() - started))


# Timed in a process of its own: this one's sixty client threads contend for its GIL.
PROBE = """
import http.client, sys, time
host, port = sys.argv[1], int(sys.argv[2])
for _ in range(5):
    started = time.monotonic()
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.status == 200, response.status
    print(time.monotonic() - started, flush=True)
    time.sleep(0.2)
"""


def _probe_times(base: str) -> list[float]:
    """Five /healthz requests, each on a new connection; how long each took."""
    host, port = base.removeprefix("http://").split(":")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, host, port], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [float(line) for line in done.stdout.split()]


def test_trickling_uploads_and_long_polls_leave_healthz_and_submissions_served(
    web: str, acme_token: str
) -> None:
    auth = {"Authorization": f"Bearer {acme_token}"}
    queued = httpx.post(
        f"{web}/api/v1/diagnoses",
        content=OOM_LOG.encode(),
        headers={**auth, "Content-Type": "text/plain", "X-Forwarded-For": "10.9.9.9"},
        timeout=30,
    )
    assert queued.status_code == 202, queued.text  # no worker runs: it stays queued
    location = web + queued.headers["Location"]

    stop = threading.Event()
    uploads: list[int] = []
    polls: list[tuple[int, float]] = []
    clients = [
        threading.Thread(target=_trickle, args=(web, uploads, stop), daemon=True)
        for _ in range(SLOW_CLIENTS)
    ] + [
        threading.Thread(target=_long_poll, args=(location, acme_token, polls), daemon=True)
        for _ in range(SLOW_CLIENTS)
    ]
    for client in clients:
        client.start()
    try:
        time.sleep(3)  # every slow client is connected and held, or refused
        probes = _probe_times(web)
        started = time.monotonic()
        normal = httpx.post(
            f"{web}/api/v1/diagnoses",
            content=OOM_LOG.encode(),
            headers={**auth, "Content-Type": "text/plain", "X-Forwarded-For": "10.8.8.8"},
            timeout=30,
        )
        normal_seconds = time.monotonic() - started
        for client in clients:
            client.join(timeout=UPLOAD_SECONDS + WAIT_SECONDS + 30)
    finally:
        stop.set()

    print(f"/healthz {[round(p, 3) for p in probes]} s, submission {normal_seconds:.2f} s")
    assert max(probes) < 1, probes
    assert normal.status_code == 202, normal.text
    assert normal_seconds < 5, normal_seconds
    # Every slow client got an answer: its bound's 429 at once, or the end of its wait or upload.
    assert len(uploads) == SLOW_CLIENTS
    assert len(polls) == SLOW_CLIENTS
    assert set(uploads) <= {408, 429}, uploads
    assert 1 <= uploads.count(408) <= 4, uploads  # at most the address' bound held
    assert {status for status, _ in polls} <= {200, 429}, polls
    # At most the token's bound waited the whole time; a poll that found its process holding
    # its share of waits was answered at once (and gave its slot back for another).
    waited = [seconds for status, seconds in polls if status == 200 and seconds >= WAIT_SECONDS]
    assert 1 <= len(waited) <= 4, polls
    assert all(seconds < WAIT_SECONDS + 5 for _, seconds in polls), polls
    # Every other poll was answered without waiting: a 429 where its token held its bound, a 200
    # where its process held its share (which of the two depends on how gunicorn spread the
    # connections over its processes). Seconds here: sixty clients start at once on two cores.
    answered_at_once = [
        seconds for status, seconds in polls if not (status == 200 and seconds >= WAIT_SECONDS)
    ]
    assert len(answered_at_once) >= SLOW_CLIENTS - 4, polls
    assert max(answered_at_once) < WAIT_SECONDS / 2, polls


def test_probes_answer_while_every_thread_of_the_process_is_held(
    two_threads: str, acme_token: str
) -> None:
    auth = {"Authorization": f"Bearer {acme_token}"}
    queued = httpx.post(
        f"{two_threads}/api/v1/diagnoses",
        content=OOM_LOG.encode(),
        headers={**auth, "Content-Type": "text/plain"},
        timeout=30,
    )
    assert queued.status_code == 202, queued.text
    location = two_threads + queued.headers["Location"]
    polls: list[tuple[int, float]] = []
    holders = [
        threading.Thread(target=_long_poll, args=(location, acme_token, polls), daemon=True)
        for _ in range(2)
    ]
    for holder in holders:
        holder.start()
    time.sleep(2)  # both threads wait

    probes = _probe_times(two_threads)
    started = time.monotonic()
    other = httpx.get(location, headers=auth, timeout=WAIT_SECONDS + 20)
    other_seconds = time.monotonic() - started
    for holder in holders:
        holder.join(timeout=WAIT_SECONDS + 20)

    assert max(probes) < 1, probes
    # Anything else waited for a thread of the main pool: both were held.
    assert other.status_code == 200
    assert other_seconds > WAIT_SECONDS / 2, other_seconds
    assert [status for status, _ in polls] == [200, 200]
