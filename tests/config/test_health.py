from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[2]


def test_healthz_answers_without_touching_dependencies(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_database_and_redis(client):
    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200, body
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"] == {"ok": True}


@pytest.mark.django_db
def test_readyz_is_503_when_redis_is_unreachable(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["redis"]["ok"] is False


def test_every_request_gets_one_log_line_with_its_request_id(client, caplog):
    caplog.set_level(logging.INFO, logger="rootcause.request")

    response = client.get("/healthz", HTTP_X_REQUEST_ID="trace-123")

    assert response["X-Request-ID"] == "trace-123"
    lines = [r for r in caplog.records if r.name == "rootcause.request"]
    assert len(lines) == 1
    assert lines[0].getMessage().startswith("GET /healthz 200")


def test_a_forged_request_id_is_replaced(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="bad id\nwith newline")

    assert response["X-Request-ID"] != "bad id\nwith newline"
    assert len(response["X-Request-ID"]) == 32


def test_json_log_format_writes_one_object_per_request(tmp_path):
    code = "from django.test import Client; Client().get('/healthz', HTTP_X_REQUEST_ID='r-1', HTTP_HOST='localhost')"
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.update(LOG_FORMAT="json", LOG_LEVEL="INFO", DEBUG="1")
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line["name"] == "rootcause.request"]
    assert len(requests) == 1, result.stderr
    assert requests[0]["request_id"] == "r-1"
    assert requests[0]["path"] == "/healthz"
    assert requests[0]["status"] == 200


@pytest.mark.django_db
def test_the_api_docs_page_loads_redoc_from_our_own_static_files(client):
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    # the sidecar's bundle, served by config/apidocs.py with its CDN logo taken out
    assert b'<script src="/api/v1/docs/redoc.js">' in response.content
    assert b"cdn.jsdelivr.net" not in response.content
    bundle = client.get("/api/v1/docs/redoc.js")
    assert bundle.status_code == 200
    assert b"cdn.redoc.ly" not in b"".join(bundle)
