"""gunicorn's settings for the web process: the Dockerfile, docker-compose.yml, the fault tests and
`make loadtest` all run `gunicorn -c gunicorn.conf.py config.wsgi:application`.

Threads, not sync workers: a sync worker is held for the whole of a request, so a few clients
sending a body slowly (or trickling their headers) stalled every other request, /healthz included.
A gthread worker waits for a new connection's first bytes in its poller, not in a thread, and its
threads share the process; headers that are too slow are cut off by plumbing/serving.py's deadline
and an upload that is too slow by config/wsgi.py's, each with a 408 (docs/operations.md).
Each value may be overridden by the GUNICORN_* variable beside it.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return int(value)


bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# gthread, with a deadline on each request's headers (plumbing/serving.py): GUNICORN_HEADER_TIMEOUT
# seconds (10) from a request's first byte, then 408 problem+json and the connection closed.
worker_class = "plumbing.serving.DeadlineThreadWorker"


def _cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's cpuset limits)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# As many processes as cores, at least two (one serves while the other restarts); the threads
# wait on the network, PostgreSQL and Redis. A process more than the cores (3 on the project's
# 2-core VM, the default until 2026-12-07) only added context switches and PostgreSQL
# connections: three processes of 8 threads took about 6 % more CPU a submission than two under
# the same load (docs/benchmarks.md, 2026-12-07). Each process keeps its threads, so a slow
# client still holds one thread of one process; there are fewer in all (16 against 24 on two
# cores), within the bounds on concurrent uploads and long polls (plumbing/concurrency.py).
workers = _int("GUNICORN_WORKERS", max(2, _cores()))
threads = _int("GUNICORN_THREADS", 8)
# A worker that does not report back for this long is killed and replaced. With threads this is a
# liveness check of the process, not a bound on one request: uploads have their own deadline.
timeout = _int("GUNICORN_TIMEOUT", 60)
graceful_timeout = 30
# An idle kept-alive connection costs a socket in the poller, not a thread.
keepalive = 5
# Bounded request lines and headers: a longer one is refused by gunicorn itself (400/431).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# The request log is our middleware's (plumbing/middleware.py), one line per request.
accesslog = None
errorlog = "-"
# Trust X-Forwarded-* only from the proxies of TRUSTED_PROXY_COUNT, as the app does itself.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
