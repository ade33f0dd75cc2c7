"""Liveness and readiness probes for the load balancer and docker-compose health checks."""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from config.celery import app as celery_app

logger = logging.getLogger(__name__)


def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving; it checks nothing else, so it never flaps with a
    dependency."""
    return JsonResponse({"status": "ok"})


def _check_database() -> dict[str, object]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor}


def _check_redis() -> dict[str, object]:
    if not settings.REDIS_URL:
        return {"ok": True, "mode": "embedded (no REDIS_URL)"}
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True}


def _check_workers() -> dict[str, object]:
    if celery_app.conf.task_always_eager:
        return {"ok": True, "mode": "eager (tasks run in the web process)"}
    replies = celery_app.control.ping(timeout=1.0) or []
    return {"ok": bool(replies), "workers": len(replies)}


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database and Redis answer and, in real mode, a worker answers a ping."""
    checks: dict[str, dict[str, object]] = {}
    for name, check in (
        ("database", _check_database),
        ("redis", _check_redis),
        ("workers", _check_workers),
    ):
        try:
            checks[name] = check()
        except Exception as exc:  # any failure of a dependency means "not ready", never a 500
            logger.warning("readiness check %s failed: %s", name, type(exc).__name__)
            checks[name] = {"ok": False, "error": type(exc).__name__}
    ready = all(c["ok"] for c in checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503
    )
