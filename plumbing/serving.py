"""gunicorn's threaded worker with a deadline on request headers (gunicorn.conf.py uses it).

gthread keeps idle connections in its poller, but once a request's first bytes arrive a thread
reads its request line and headers to the end, however slowly they come: a client sending one byte
a second held a thread for as long as it liked. Here the headers of each request must be complete
within GUNICORN_HEADER_TIMEOUT seconds of the request's first byte (a timeout on each read, set to
what is left); past it the client gets a 408 problem+json and the connection is closed. The body
then has a deadline of its own on each socket read: UPLOAD_TIMEOUT_SECONDS from the end of the
headers in all, UPLOAD_IDLE_SECONDS between two reads; a read past it raises TimeoutError, which
config/wsgi.py's input answers with a 408.

The probes (/healthz, /readyz) have two threads of their own in each process: a new connection
waits in the poller for its first bytes (gthread gave it a thread at once), and a request whose
first bytes, peeked at without reading them, are a probe's goes to that pool. Long polls and
uploads may then hold every thread of the main pool within their bounds (plumbing/concurrency.py)
and a load balancer still sees a live process.

This reaches into gunicorn's gthread worker (`handle`, `handle_request`, the parser's socket
reader), whose version requirements.lock pins; tests/e2e/test_serving.py runs it for real.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import time
from concurrent import futures
from functools import partial
from typing import Any

from django.conf import settings
from gunicorn.workers.gthread import (  # type: ignore[import-untyped]  # no types
    TConn,
    ThreadWorker,
)

PROBLEM = "https://rootcause.dev/problems/request-timed-out"


def header_timeout() -> float:
    value = os.environ.get("GUNICORN_HEADER_TIMEOUT", "") or "10"
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"GUNICORN_HEADER_TIMEOUT={value!r} must be a number of seconds") from None
    if seconds <= 0:
        raise ValueError(f"GUNICORN_HEADER_TIMEOUT={value!r} must be positive")
    return seconds


# gunicorn's gthread connection (TConn) and parsed request: this module adds attributes of its own
# to them (header_deadline, a wrapped init and parser chunk), so they are read loosely, by name.
Conn = Any
GunicornRequest = Any  # as Conn: gunicorn ships no type hints


class HeaderTimeout(Exception):
    """The request line and headers did not arrive in time."""


def _bounded(conn: Conn) -> None:
    """Make the parser's socket reads of `conn` respect conn.header_deadline while it is set, and
    conn.body_deadline and conn.body_idle while the application reads the body."""
    unreader = getattr(getattr(conn, "parser", None), "unreader", None)
    if unreader is None or getattr(unreader, "_rootcause_bounded", False):
        return
    read = unreader.chunk

    def chunk(size_hint: int | None = None) -> bytes:
        deadline = getattr(conn, "header_deadline", None)
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise HeaderTimeout()
            conn.sock.settimeout(remaining)
            try:
                data: bytes = read(size_hint)
            except TimeoutError:
                raise HeaderTimeout() from None
            return data
        body_deadline = getattr(conn, "body_deadline", None)
        if body_deadline is not None:
            # Each recv(), not each read of the application: a read of 1 MiB is many recv()s,
            # and a body trickled a byte at a time never let one of them wait long enough to
            # time out. TimeoutError reaches config/wsgi.py's input, which answers 408.
            remaining = body_deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request body's deadline has passed")
            conn.sock.settimeout(min(conn.body_idle, remaining))
        data = read(size_hint)
        return data

    unreader.chunk = chunk
    unreader._rootcause_bounded = True


# The probes' request lines: served by a pool of their own (DeadlineThreadWorker.enqueue_req).
PROBES = tuple(
    f"{method} /{path}".encode() + end
    for method in ("GET", "HEAD")
    for path in ("healthz", "readyz")
    for end in (b" ", b"?")
)
PROBE_THREADS = 2
# How long a kept-alive connection's unread body (an answer given before reading it: a 429, a
# 413) is drained before the connection is closed instead; gthread waits 5 s, which a client
# trickling its body turned into 5 s of a thread for every refused request.
DRAIN_SECONDS = 0.5


def _is_probe(conn: Conn) -> bool:
    """Whether the request waiting on `conn` is a probe's, from its first bytes, read without
    taking them off the socket (they are still there for the parser)."""
    if conn.cfg.is_ssl:
        return False
    unreader = getattr(getattr(conn, "parser", None), "unreader", None)
    if unreader is not None and unreader.buf.getvalue():
        return False  # bytes of the request already read off the socket: not peeked at here
    try:
        first = conn.sock.recv(16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return False
    return first.startswith(PROBES)


class DeadlineThreadWorker(ThreadWorker):
    header_seconds = header_timeout()

    def init_process(self) -> None:
        # The probes' own threads: /healthz and /readyz answer while every thread of the main
        # pool is held (by long polls, uploads, a burst), so that a load balancer does not take
        # a busy process for a dead one.
        self.probe_pool = futures.ThreadPoolExecutor(max_workers=PROBE_THREADS)
        super().init_process()

    def accept(self, listener: socket.socket) -> None:
        """A new connection waits in the poller for its first bytes, not in a thread (gthread
        hands it to the pool at once): only then can it be told whether it is a probe's."""
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client, address, listener.getsockname())  # non-blocking
        # The keepalive timeout, as for gthread's own pending connections: murder_pending reads
        # the deque as sorted by timeout.
        conn.timeout = time.monotonic() + self.cfg.keepalive
        self.pending_conns.append(conn)
        self.poller.register(
            client, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def enqueue_req(self, conn: Conn) -> None:
        if not _is_probe(conn):
            super().enqueue_req(conn)
            return
        future = self.probe_pool.submit(self.handle, conn)
        future.add_done_callback(
            lambda done: self.method_queue.defer(self.finish_request, conn, done)
        )

    def handle(self, conn: Conn) -> object:
        # The clock starts when this request's first bytes are read, not while the connection
        # sat idle in the poller (that is the keepalive timeout's business).
        conn.header_deadline = time.monotonic() + self.header_seconds
        # gthread calls conn.init() for every request of a kept-alive connection: wrapped once
        # per connection, not once per request (a chain that grew with each request and ended in
        # a RecursionError, a 500, after about a thousand requests on one connection).
        if not getattr(conn, "_rootcause_init_wrapped", False):
            original_init = conn.init

            def init() -> None:
                original_init()
                _bounded(conn)

            conn.init = init
            conn._rootcause_init_wrapped = True
        _bounded(conn)  # a kept-alive connection already has its parser
        return super().handle(conn)

    def handle_request(self, req: GunicornRequest, conn: Conn) -> object:
        # The headers are in: from here on the body's own deadline applies to every socket read
        # (UPLOAD_TIMEOUT_SECONDS from now, UPLOAD_IDLE_SECONDS between bytes); config/wsgi.py
        # turns a read past it into a 408.
        conn.header_deadline = None
        conn.body_deadline = time.monotonic() + settings.UPLOAD_TIMEOUT_SECONDS
        conn.body_idle = settings.UPLOAD_IDLE_SECONDS
        try:
            return super().handle_request(req, conn)
        finally:
            # gunicorn's own drain of an unread body (keep-alive) has its own deadline.
            conn.body_deadline = None
            conn.sock.settimeout(None)

    def _keepalive_after(self, conn: Conn, keepalive: bool) -> bool:
        if not keepalive:
            return False
        return bool(conn.parser.finish_body(deadline=time.monotonic() + DRAIN_SECONDS))

    def handle_error(
        self, req: GunicornRequest, client: socket.socket, addr: object, exc: BaseException
    ) -> None:
        if not isinstance(exc, HeaderTimeout):
            super().handle_error(req, client, addr, exc)
            return
        body = json.dumps(
            {
                "type": PROBLEM,
                "title": "Request timed out",
                "status": 408,
                "detail": f"The request's headers did not arrive within {self.header_seconds:g} s.",
            }
        ).encode()
        head = (
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/problem+json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            client.settimeout(2)
            client.sendall(head + body)
        except OSError:
            pass
        self.log.info("request headers timed out from %s", addr)
