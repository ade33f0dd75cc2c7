"""Exactly one alert per finished diagnosis and endpoint across a worker SIGKILL: a real worker
process, a real local HTTP receiver that verifies the Standard Webhooks signature and processes
each `webhook-id` once, as a receiver should, and a kill at the worst moments."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import standardwebhooks

from alerts import delivery as sending
from alerts import services
from alerts.models import Webhook, WebhookDelivery
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.e2e


class Receiver:
    """Records every request; verifies its signature; processes a `webhook-id` the first time it
    comes and answers any later copy 200 "duplicate". Requests to /hold wait (once) until the
    test releases them, so that the worker can be killed while one is in flight."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.requests: list[dict[str, Any]] = []
        self.processed: dict[str, list[str]] = {}  # path -> the webhook-ids processed there
        self.held = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if self.path == "/hold" and not receiver.held.is_set():
                    receiver.held.set()
                    receiver.release.wait(60)
                try:
                    standardwebhooks.Webhook(receiver.secrets[self.path]).verify(body, headers)
                except standardwebhooks.WebhookVerificationError:
                    verified = False
                else:
                    verified = True
                message_id = headers["webhook-id"]
                with receiver.lock:
                    done = receiver.processed.setdefault(self.path, [])
                    duplicate = message_id in done
                    if verified and not duplicate:
                        done.append(message_id)
                    receiver.requests.append(
                        {"path": self.path, "id": message_id, "verified": verified}
                    )
                try:
                    self.send_response(200 if verified else 401)
                    self.end_headers()
                    self.wfile.write(b"duplicate" if duplicate else b"ok")
                except OSError:
                    pass  # the sender was killed meanwhile

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def worker_env(worker_env: dict[str, str]) -> dict[str, str]:
    # The receiver is on loopback; a killed worker's delivery lease expires within seconds.
    return {
        **worker_env,
        "WEBHOOKS_ALLOW_PRIVATE_ADDRESSES": "1",
        "WEBHOOK_DELIVERY_LEASE_SECONDS": "4",
    }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def _endpoints(acme: Any, receiver: Receiver, *paths: str) -> list[Webhook]:
    hooks = []
    for path in paths:
        hook = Webhook.objects.create(
            organization=acme, url=f"{receiver.url}{path}", secret=services.new_secret()
        )
        receiver.secrets[path] = hook.secret
        hooks.append(hook)
    return hooks


def _wait_for(condition: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen in {timeout} s")


def _all_delivered(diagnosis_id: str, endpoints: int) -> bool:
    rows = WebhookDelivery.objects.filter(diagnosis_id=diagnosis_id)
    states = list(rows.values_list("state", flat=True))
    return len(states) == endpoints and all(s == "delivered" for s in states)


def _assert_exactly_once(receiver: Receiver, diagnosis_id: str, paths: tuple[str, ...]) -> None:
    rows = {
        row.webhook.url.removeprefix(receiver.url): str(row.id)
        for row in WebhookDelivery.objects.filter(diagnosis_id=diagnosis_id).select_related(
            "webhook"
        )
    }
    assert sorted(rows) == sorted(paths)  # one outbox row per endpoint
    for path in paths:
        seen = [r for r in receiver.requests if r["path"] == path]
        assert seen, path
        assert all(r["verified"] for r in seen)
        # Every copy, first send or resend after the kill, carries the outbox row's id …
        assert {r["id"] for r in seen} == {rows[path]}
        # … so the receiver processed it once.
        assert receiver.processed[path] == [rows[path]]


def test_a_worker_killed_with_a_delivery_in_flight_resends_it_with_the_same_id(
    real_worker, catalogue, acme_scale, acme_api, receiver, client
):
    _endpoints(acme_scale, receiver, "/hold", "/plain")
    response = acme_api.post("/api/v1/diagnoses", data=OOM_LOG, content_type="text/plain")
    assert response.status_code == 202
    diagnosis_id = response.json()["id"]

    assert receiver.held.wait(90), "no delivery reached the receiver"
    real_worker.kill()  # the POST is in flight: the receiver has it, the worker has no answer
    receiver.release.set()  # the receiver processes it now; its answer reaches nobody
    assert Diagnosis.objects.get(id=diagnosis_id).status == "done"
    held = WebhookDelivery.objects.get(diagnosis_id=diagnosis_id, webhook__url__endswith="/hold")
    assert held.state == "pending"  # the kill came before the worker recorded anything

    real_worker.start()  # Redis redelivers the unacknowledged message; the lease expires
    _wait_for(lambda: _all_delivered(diagnosis_id, 2), "every delivery")

    _assert_exactly_once(receiver, diagnosis_id, ("/hold", "/plain"))
    assert [r["path"] for r in receiver.requests].count("/hold") == 2  # sent again after the kill
    held.refresh_from_db()
    assert held.attempts == 1  # the killed attempt left no record; the resend did

    # The worker timed each stage it ran (before the delivery that was killed); this process,
    # the web's, reports those figures.
    from prometheus_client.parser import text_string_to_metric_families

    text = client.get("/metrics").content.decode()
    counts = {
        sample.labels["stage"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "rootcause_stage_seconds"
        for sample in family.samples
        if sample.name == "rootcause_stage_seconds_count"
    }
    assert counts, text
    # every stage a log runs (a bundle's analysis is listed, at 0, for a log)
    assert all(counts[stage] >= 1 for stage in counts if stage != "analysing"), counts


def test_a_worker_killed_as_the_diagnosis_finishes_delivers_once(
    real_worker, catalogue, acme_scale, acme_api, receiver, settings
):
    settings.WEBHOOK_DELIVERY_LEASE_SECONDS = 4  # as the worker's: the sweeper's grace
    _endpoints(acme_scale, receiver, "/first", "/second")
    response = acme_api.post("/api/v1/diagnoses", data=OOM_LOG, content_type="text/plain")
    assert response.status_code == 202
    diagnosis_id = response.json()["id"]

    _wait_for(
        lambda: Diagnosis.objects.get(id=diagnosis_id).status in ("done", "failed"),
        "the diagnosis",
    )
    real_worker.kill()
    assert Diagnosis.objects.get(id=diagnosis_id).status == "done"

    real_worker.start()
    # A message lost in the kill (published after the commit, or not yet) is the sweeper's to
    # find; the beat is not running here, so the test calls it as the beat would.
    deadline = time.monotonic() + 90
    while not _all_delivered(diagnosis_id, 2) and time.monotonic() < deadline:
        time.sleep(5)
        sending.sweep_pending_deliveries()

    assert _all_delivered(diagnosis_id, 2)
    _assert_exactly_once(receiver, diagnosis_id, ("/first", "/second"))
