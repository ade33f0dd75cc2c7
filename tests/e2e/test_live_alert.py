"""`rootcause run` posting to a live server with a real worker: the organisation's webhook fires
while the job still runs, long before the job's own timeout would have ended it (issue 31).

The job is tests/live/test_run.py's: rank 2 raises a CUDA OOM and then the job waits 120 s, as
the other ranks of a real job wait in their next collective until the watchdog fires. The
receiver is a local HTTP server that verifies the Standard Webhooks signature."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks

from alerts import services
from alerts.models import Webhook
from tests.live.test_run import FAILING_JOB
from tests.live.watching import start

pytestmark = pytest.mark.e2e

JOB_TIMEOUT = 120.0  # what the job waits after its traceback, standing for the watchdog


class Alerts:
    """Each verified POST's arrival time and JSON body."""

    def __init__(self, secret: str) -> None:
        self.received: list[tuple[float, dict[str, Any]]] = []
        alerts = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    standardwebhooks.Webhook(secret).verify(body, headers)
                except standardwebhooks.WebhookVerificationError:
                    self.send_response(401)
                else:
                    alerts.received.append((time.monotonic(), json.loads(body)))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, timeout: float) -> tuple[float, dict[str, Any]] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.received:
                return self.received[0]
            time.sleep(0.05)
        return None


@pytest.fixture
def worker_env(worker_env: dict[str, str]) -> dict[str, str]:
    return {**worker_env, "WEBHOOKS_ALLOW_PRIVATE_ADDRESSES": "1"}  # the receiver is on loopback


@pytest.fixture
def alerts(acme_scale: Any) -> Iterator[Alerts]:
    secret = services.new_secret()
    receiver = Alerts(secret)
    Webhook.objects.create(organization=acme_scale, url=receiver.url, secret=secret)
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def test_the_webhook_fires_while_the_job_runs(
    real_worker, catalogue, live_server, acme_token, alerts, tmp_path: Path
):
    job_file = tmp_path / "train.py"
    job_file.write_text(FAILING_JOB)
    job = start(
        [
            "run",
            "--server",
            live_server.url,
            "--token",
            acme_token,
            "--stall-after",
            "0",
            "--",
            sys.executable,
            str(job_file),
            str(JOB_TIMEOUT),
        ]
    )
    try:
        done = job.wait_for("TRACEBACK_DONE", timeout=60)
        assert done is not None, job.text()
        arrived = alerts.wait(timeout=JOB_TIMEOUT - 30)
        assert arrived is not None, job.text("err")
        at, event = arrived
        assert job.proc.poll() is None  # the job still waits: the alert came before its end
        assert at - done.at < JOB_TIMEOUT - 30
        assert event["type"] == "diagnosis.done"
        data = event["data"]
        assert data["failure"]["slug"] == "activation-oom"
        assert data["initiating_rank"] == 2
        assert "memory" in data["root_cause"].lower()
        assert data["link"].endswith(f"/diagnoses/{data['diagnosis_id']}/")
        # what left the machine was masked by `run` before it was posted
        assert "alice@example.com" not in json.dumps(event)
        posted = job.wait_for(f"rootcause: posted to {live_server.url}", timeout=30)
        assert posted is not None, job.text("err")
        assert data["diagnosis_id"] in posted.text
    finally:
        job.proc.send_signal(signal.SIGTERM)
        job.finish(timeout=30)
