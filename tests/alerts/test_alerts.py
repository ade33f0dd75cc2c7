"""Alerts through the outbox, against a real local HTTP server: signatures a Standard Webhooks
library verifies, retries on 5xx, no retry on other 4xx, private-address refusal, the delivery
log, the test and redeliver actions, one outbox row per diagnosis and endpoint, and the API's
roles, tier and tenancy."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import standardwebhooks
from django.db import transaction

from accounts.actors import actor_for_person
from alerts import delivery as sending
from alerts import payloads, services
from alerts.models import Webhook, WebhookDelivery
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/webhooks"


class Receiver:
    """A local HTTP server answering each POST with the next scripted status (200 when the script
    is used up) and keeping what it received."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.redirect_to = ""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.received.append((self.path, dict(self.headers.items()), body))
                if self.path == "/moved" and receiver.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", receiver.redirect_to)
                    self.end_headers()
                    return
                status = receiver.script.pop(0) if receiver.script else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(f"answer {status}".encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    server = Receiver()
    yield server
    server.close()


def _client(user: Any) -> Any:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def alice_api(alice: Any, acme: Any) -> Any:
    return _client(alice)


def _webhook(client: Any, url: str, **filters: Any) -> dict[str, Any]:
    response = client.post(URL, {"url": url, **filters}, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def _diagnose(client: Any, capture: Any) -> str:
    with capture(execute=True):
        response = client.post("/api/v1/diagnoses", OOM_LOG, content_type="text/plain")
    assert response.status_code == 202, response.content
    return str(response.json()["id"])


def test_a_finished_diagnosis_is_posted_signed_with_its_result(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    hook = _webhook(alice_api, f"{receiver.url}/hook")
    assert hook["secret"].startswith("whsec_")

    diagnosis_id = _diagnose(alice_api, django_capture_on_commit_callbacks)

    ((path, headers, body),) = receiver.received
    assert path == "/hook"
    headers = {k.lower(): v for k, v in headers.items()}
    event = standardwebhooks.Webhook(hook["secret"]).verify(body, headers)
    assert event["type"] == "diagnosis.done"
    data = event["data"]
    assert data["diagnosis_id"] == diagnosis_id
    assert data["failure"]["slug"] == "optimizer-state-oom"
    # the confidence in words beside the figure, as the result has them
    assert data["failure"]["confidence_words"].startswith(data["failure"]["confidence_level"])
    assert data["root_cause"]
    assert data["remediation"]  # Scale includes the fix
    assert data["link"].endswith(f"/diagnoses/{diagnosis_id}/")
    assert "alice@acme.example" not in body.decode()
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(services.new_secret()).verify(body, headers)

    log = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert [(d["state"], d["diagnosis"]) for d in log] == [("delivered", diagnosis_id)]
    (attempt,) = log[0]["attempts"]
    assert attempt["status_code"] == 200
    assert attempt["response_excerpt"] == "answer 200"
    assert attempt["latency_ms"] >= 0


def test_retries_on_5xx_and_429_then_succeeds(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    # Tasks run inline here, countdowns and all: the next attempt must be due at once.
    monkeypatch.setattr(sending, "backoff_seconds", lambda attempts: 0.0)
    hook = _webhook(alice_api, receiver.url)
    receiver.script = [500, 429, 503]

    _diagnose(alice_api, django_capture_on_commit_callbacks)

    assert len(receiver.received) == 4
    assert len({h["webhook-id"] for _, h, _ in receiver.received}) == 1  # one message, retried
    (delivery,) = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert delivery["state"] == "delivered"
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 429, 503, 200]


def test_another_4xx_is_not_retried(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    hook = _webhook(alice_api, receiver.url)
    receiver.script = [404]

    _diagnose(alice_api, django_capture_on_commit_callbacks)

    assert len(receiver.received) == 1
    (delivery,) = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert delivery["state"] == "failed"


def test_backoff_grows_with_jitter_and_a_day_old_delivery_is_given_up(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    first = [sending.backoff_seconds(1) for _ in range(50)]
    assert all(5 <= s <= 10 for s in first)
    assert len(set(first)) > 1
    assert 20 <= sending.backoff_seconds(3) <= 40
    assert sending.backoff_seconds(30) <= sending.BACKOFF_MAX_SECONDS

    hook = _webhook(alice_api, receiver.url)
    receiver.script = [500]
    delivery = services.send_test_event(
        actor=actor_for_person(acme_scale.memberships.first().user, acme_scale.pk),
        webhook=Webhook.objects.get(id=hook["id"]),
    )
    from django.utils import timezone

    WebhookDelivery.objects.filter(id=delivery.id).update(
        created_at=timezone.now() - sending.GIVE_UP_AFTER
    )
    assert sending.attempt_delivery(delivery_id=delivery.id) is None
    delivery.refresh_from_db()
    assert delivery.state == "failed"


def test_private_loopback_and_link_local_addresses_are_refused(
    acme_scale, alice_api, receiver, settings, django_capture_on_commit_callbacks
):
    hook = _webhook(alice_api, receiver.url)
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = False

    _diagnose(alice_api, django_capture_on_commit_callbacks)

    assert receiver.received == []
    (delivery,) = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert delivery["state"] == "failed"
    assert delivery["attempts"][0]["error"].startswith("refused")
    for url in (
        "http://localhost/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[fe80::1]/",
    ):
        with pytest.raises(sending.RefusedAddress):
            sending.check_destination(url)


def test_every_redirect_hop_is_checked_and_followed_by_hand(
    acme_scale, alice_api, receiver, monkeypatch
):
    checked: list[str] = []
    check = sending.check_destination

    def recording(url: str) -> sending.Destination:
        checked.append(url)
        return check(url)

    monkeypatch.setattr(sending, "check_destination", recording)
    receiver.redirect_to = f"{receiver.url}/final"

    sent = sending._send(f"{receiver.url}/moved", "{}", {"content-type": "application/json"})

    assert sent.status_code == 200
    assert checked == [f"{receiver.url}/moved", f"{receiver.url}/final"]
    assert [path for path, _, _ in receiver.received] == ["/moved", "/final"]


def test_one_outbox_row_per_diagnosis_and_endpoint_even_when_completion_runs_twice(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    _webhook(alice_api, receiver.url)
    _webhook(alice_api, f"{receiver.url}/second")
    diagnosis_id = _diagnose(alice_api, django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert services.enqueue_alerts(diagnosis_id) == 0

    assert WebhookDelivery.objects.filter(diagnosis_id=diagnosis_id).count() == 2
    assert len(receiver.received) == 2


def test_filters_choose_which_diagnoses_alert(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    _webhook(alice_api, f"{receiver.url}/nccl", failure_slug="nccl-timeout")
    _webhook(alice_api, f"{receiver.url}/sure", min_confidence=0.999)
    _webhook(alice_api, f"{receiver.url}/first", first_occurrence_only=True)
    _webhook(alice_api, f"{receiver.url}/memory", category="memory")

    _diagnose(alice_api, django_capture_on_commit_callbacks)
    _diagnose(alice_api, django_capture_on_commit_callbacks)

    paths = [path for path, _, _ in receiver.received]
    assert paths.count("/first") == 1
    assert "/nccl" not in paths
    assert "/sure" not in paths
    category = Diagnosis.objects.filter(organization=acme_scale)[0].result["failure"]
    assert paths.count("/memory") == (2 if category["category"] == "memory" else 0)


def test_test_event_and_redeliver(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    hook = _webhook(alice_api, receiver.url)
    receiver.script = [404]

    with django_capture_on_commit_callbacks(execute=True):
        tested = alice_api.post(f"{URL}/{hook['id']}/test")
    assert tested.status_code == 202
    (delivery,) = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert delivery["state"] == "failed"

    with django_capture_on_commit_callbacks(execute=True):
        again = alice_api.post(f"{URL}/{hook['id']}/deliveries/{delivery['id']}/redeliver")
    assert again.status_code == 202

    (delivery,) = alice_api.get(f"{URL}/{hook['id']}/deliveries").json()["results"]
    assert delivery["state"] == "delivered"
    assert [a["status_code"] for a in delivery["attempts"]] == [404, 200]
    events = [json.loads(body)["type"] for _, _, body in receiver.received]
    assert events == ["webhook.test", "webhook.test"]
    assert receiver.received[0][1]["webhook-id"] == receiver.received[1][1]["webhook-id"]


def test_webhooks_are_for_owners_and_admins_of_their_own_organisation(
    acme_scale, alice_api, bob, charlie, umbrella, receiver
):
    hook = _webhook(alice_api, receiver.url)
    listed = alice_api.get(URL).json()["results"]
    assert [h["id"] for h in listed] == [hook["id"]]
    assert "secret" not in listed[0]

    assert _client(bob).get(URL).status_code == 403
    assert _client(bob).post(URL, {"url": receiver.url}, format="json").status_code == 403
    outsider = _client(charlie)
    assert outsider.delete(f"{URL}/{hook['id']}").status_code in (403, 404)
    assert outsider.get(f"{URL}/{hook['id']}/deliveries").status_code in (403, 404)
    assert alice_api.delete(f"{URL}/{hook['id']}").status_code == 204
    assert alice_api.get(URL).json()["results"] == []


def test_webhooks_and_their_deliveries_are_paged(acme_scale, alice_api, receiver):
    hooks = [_webhook(alice_api, f"{receiver.url}/{n}") for n in range(3)]
    first = alice_api.get(URL, {"limit": "2"}).json()
    assert first["count"] == 3
    assert [h["id"] for h in first["results"]] == [h["id"] for h in hooks[:2]]
    rest = alice_api.get(first["next"]).json()
    assert [h["id"] for h in rest["results"]] == [hooks[2]["id"]]
    assert rest["next"] is None

    for _ in range(3):
        assert alice_api.post(f"{URL}/{hooks[0]['id']}/test").status_code == 202
    deliveries = f"{URL}/{hooks[0]['id']}/deliveries"
    page = alice_api.get(deliveries, {"limit": "2"}).json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert len(alice_api.get(deliveries, {"limit": "2", "offset": "2"}).json()["results"]) == 1
    assert alice_api.get(deliveries, {"limit": "0"}).status_code == 400


def test_alerts_are_scale_only_and_the_refusal_names_the_tier(alice_api, acme, receiver):
    response = alice_api.post(URL, {"url": receiver.url}, format="json")

    assert response.status_code == 403
    assert "Scale" in response.json()["detail"]


def test_an_organisation_off_scale_gets_no_alerts(
    acme, alice_api, receiver, django_capture_on_commit_callbacks
):
    from alerts.models import Webhook

    Webhook.objects.create(organization=acme, url=receiver.url, secret=services.new_secret())

    _diagnose(alice_api, django_capture_on_commit_callbacks)

    assert receiver.received == []
    assert not WebhookDelivery.objects.exists()


def test_a_second_completion_before_the_first_delivery_sends_nothing_more(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    _webhook(alice_api, receiver.url)
    diagnosis = Diagnosis.objects.create(
        organization=acme_scale,
        source="api",
        size_bytes=1,
        status=Diagnosis.Status.DONE,
        outcome="diagnosed",
        failure_slug="optimizer-state-oom",
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert services.enqueue_alerts(diagnosis.id) == 1
        assert services.enqueue_alerts(diagnosis.id) == 0

    assert WebhookDelivery.objects.filter(diagnosis=diagnosis).count() == 1
    assert len(receiver.received) == 1


def test_a_slack_compatible_endpoint_gets_a_message_with_the_link(
    acme_scale, alice_api, receiver, django_capture_on_commit_callbacks
):
    hook = _webhook(alice_api, receiver.url, payload_format="slack")
    assert hook["payload_format"] == "slack"

    diagnosis_id = _diagnose(alice_api, django_capture_on_commit_callbacks)

    ((_, headers, body),) = receiver.received
    message = json.loads(body)
    assert set(message) == {"text", "blocks"}
    assert "Optimizer State Memory Explosion" in message["text"]
    assert f"/diagnoses/{diagnosis_id}/>" in message["text"]
    heading = message["blocks"][0]
    assert heading["type"] == "section"
    assert heading["text"]["type"] == "mrkdwn"
    assert (
        f"/diagnoses/{diagnosis_id}/|Optimizer State Memory Explosion>" in heading["text"]["text"]
    )
    root_cause = Diagnosis.objects.get(id=diagnosis_id).result["root_cause"]
    assert any(b.get("text", {}).get("text") == root_cause for b in message["blocks"][1:])
    # Signed all the same, for receivers that check.
    headers = {k.lower(): v for k, v in headers.items()}
    assert standardwebhooks.Webhook(hook["secret"]).verify(body, headers) == message


def test_slack_blocks_escape_slacks_control_characters():
    message = payloads.slack_message(
        {
            "type": "diagnosis.done",
            "data": {
                "failure": {"title": "A <b> & c", "category": "memory", "confidence": 0.9},
                "root_cause": "x < y > z",
                "initiating_rank": None,
                "link": "https://rootcause.example/diagnoses/1/",
            },
        }
    )

    texts = [b["text"]["text"] for b in message["blocks"] if b["type"] == "section"]
    assert texts == [
        "*<https://rootcause.example/diagnoses/1/|A &lt;b&gt; &amp; c>* · memory · confidence "
        "0.90 (certain)",
        "x &lt; y &gt; z",
    ]


LOW_FAILURE = {
    "title": "Activation Memory Spike",
    "category": "memory",
    "confidence": 0.41,
    "confidence_level": "possible",
    "confidence_words": "possible — confirm with this check: read the <innermost> frames",
}


def _event(failure: dict[str, object]) -> dict[str, object]:
    return {
        "type": "diagnosis.done",
        "data": {
            "failure": failure,
            "root_cause": "It ran out.",
            "initiating_rank": 2,
            "link": "https://rootcause.example/diagnoses/1/",
        },
    }


def test_slack_says_the_confidence_in_words_with_what_would_decide_it():
    message = payloads.slack_message(_event(LOW_FAILURE))

    said = "0.41 (possible — confirm with this check: read the &lt;innermost&gt; frames)"
    assert message["blocks"][0]["text"]["text"].endswith(f" · confidence {said}")
    assert message["text"].startswith(f"rootcause: Activation Memory Spike (confidence {said})")


def test_the_email_says_the_confidence_in_words_with_what_would_decide_it():
    subject, body = payloads.email_text(_event(LOW_FAILURE))

    assert subject == "rootcause: Activation Memory Spike"
    assert body.splitlines()[:2] == [
        "Activation Memory Spike (memory)",
        "Confidence: 0.41 (possible — confirm with this check: read the <innermost> frames)",
    ]


def test_an_event_stored_before_the_words_existed_is_worded_from_its_figure():
    failure = {"title": "T", "category": "memory", "confidence": 0.93}

    _, body = payloads.email_text(_event(failure))

    assert "Confidence: 0.93 (certain)" in body


# --- DNS rebinding: the request goes to the address that was checked ----------------------------


def test_a_name_resolving_to_loopback_is_refused_when_private_addresses_are_off(receiver, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = False
    port = receiver.server.server_address[1]

    sent = sending._send(f"http://localhost:{port}/hook", "{}", {})

    assert sent.status_code is None
    assert sent.error.startswith("refused")
    assert receiver.received == []


def test_the_connection_goes_to_the_resolved_address_with_the_name_in_the_host_header(
    receiver, monkeypatch
):
    port = receiver.server.server_address[1]
    lookups: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(sending, "resolve", resolver)

    sent = sending._send(f"http://hooks.acme.example:{port}/hook", "{}", {})

    assert sent.status_code == 200
    assert lookups == ["hooks.acme.example"]  # resolved once, by the check
    ((path, headers, _),) = receiver.received
    assert path == "/hook"
    assert {k.lower(): v for k, v in headers.items()}["host"] == f"hooks.acme.example:{port}"


class _Rebinding:
    """A resolver that answers a public address the first time and loopback afterwards, as a
    rebinding attacker's DNS server would."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls += 1
        return ["93.184.215.14"] if self.calls == 1 else ["127.0.0.1"]


def test_a_rebinding_name_is_connected_to_at_the_address_that_was_checked(settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = False
    monkeypatch.setattr(sending, "resolve", _Rebinding())
    seen: list[Any] = []

    def internet(request: Any) -> Any:  # stands in for the public host: no network in tests
        import httpx

        seen.append(request)
        return httpx.Response(200, text="ok")

    import httpx

    monkeypatch.setattr(sending, "transport", lambda: httpx.MockTransport(internet))

    sent = sending._send("https://hooks.attacker.example/hook", "{}", {})

    assert sent.status_code == 200
    (request,) = seen
    assert request.url.host == "93.184.215.14"  # the checked address, not the second answer
    assert request.url.path == "/hook"
    assert request.headers["host"] == "hooks.attacker.example"
    assert request.extensions["sni_hostname"] == "hooks.attacker.example"


def test_a_redirect_to_a_name_that_now_resolves_to_loopback_is_refused(
    receiver, settings, monkeypatch
):
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = False
    monkeypatch.setattr(sending, "resolve", _Rebinding())
    port = receiver.server.server_address[1]
    seen: list[Any] = []
    import httpx

    def internet(request: Any) -> Any:
        seen.append(request)
        return httpx.Response(307, headers={"location": f"http://hooks.attacker.example:{port}/"})

    monkeypatch.setattr(sending, "transport", lambda: httpx.MockTransport(internet))

    sent = sending._send("https://hooks.attacker.example/hook", "{}", {})

    assert len(seen) == 1
    assert sent.error.startswith("refused")
    assert receiver.received == []


# --- The delivery's lease: a duplicate message never sends alongside, a lost one is swept ---------


def test_a_duplicate_message_neither_sends_alongside_nor_early_and_a_lost_one_is_swept(
    acme_scale, alice, receiver, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from alerts.models import Webhook

    hook = Webhook.objects.create(
        organization=acme_scale, url=receiver.url, secret=services.new_secret()
    )
    delivery = services.send_test_event(
        actor=actor_for_person(alice, acme_scale.pk), webhook=hook
    )  # its message is never published: on_commit is not run here
    rows = WebhookDelivery.objects.filter(id=delivery.id)

    rows.update(leased_until=timezone.now() + timedelta(seconds=30))  # another task sends it
    busy = sending.attempt_delivery(delivery_id=delivery.id)
    assert isinstance(busy, sending.Busy)
    assert 20 < busy.retry_after <= 30

    rows.update(leased_until=None, next_attempt_at=timezone.now() + timedelta(minutes=5))
    assert sending.attempt_delivery(delivery_id=delivery.id) is None  # not due: a duplicate
    assert receiver.received == []
    with django_capture_on_commit_callbacks(execute=True):
        assert sending.sweep_pending_deliveries() == 0  # scheduled, not lost

    rows.update(next_attempt_at=timezone.now() - timedelta(minutes=5))  # its message was lost
    with django_capture_on_commit_callbacks(execute=True):
        assert sending.sweep_pending_deliveries() == 1

    assert len(receiver.received) == 1
    assert rows.get().state == "delivered"
    with django_capture_on_commit_callbacks(execute=True):
        assert sending.sweep_pending_deliveries() == 0


def _self_signed(tmp_path: Any, name: str) -> tuple[str, str]:
    """A certificate for `name` (its own issuer) and its key, as PEM files."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


@pytest.mark.parametrize(
    ("served_name", "delivered"), [("hooks.acme.test", True), ("other.test", False)]
)
def test_https_to_the_pinned_address_sends_the_name_in_sni_and_checks_the_certificate_by_it(
    tmp_path, receiver, monkeypatch, served_name, delivered
):
    import ssl

    import httpx

    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path, served_name)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    names: list[str | None] = []

    def server_name(sock: Any, name: str | None, context: Any) -> None:
        names.append(name)

    server_context.sni_callback = server_name
    receiver.server.socket = server_context.wrap_socket(receiver.server.socket, server_side=True)
    port = receiver.server.server_address[1]
    # The receiver's certificate is trusted; the name, not the address, must match it.
    monkeypatch.setattr(
        sending,
        "transport",
        lambda: httpx.HTTPTransport(verify=ssl.create_default_context(cafile=cert)),
    )
    monkeypatch.setattr(sending, "resolve", lambda host, port: ["127.0.0.1"])

    sent = sending._send(f"https://hooks.acme.test:{port}/hook", "{}", {})

    assert names == ["hooks.acme.test"]  # SNI carried the name, though the URL had the address
    if delivered:
        assert sent.status_code == 200, sent.error
        ((_path, headers, _),) = receiver.received
        assert {k.lower(): v for k, v in headers.items()}["host"] == f"hooks.acme.test:{port}"
    else:  # a certificate for another name is refused, as it would be without the pinning
        assert sent.status_code is None
        assert sent.error.startswith("no answer")
        assert receiver.received == []


# --- E-mail alerts in the API -------------------------------------------------------------------


def test_email_alerts_through_the_api(
    acme_scale, alice_api, alice, bob, charlie, umbrella, django_capture_on_commit_callbacks
):
    from django.core import mail

    bob_id = str(bob.memberships.get().public_id)
    members = alice_api.get("/api/v1/organization/members").json()["results"]
    assert bob_id in {m["id"] for m in members}

    created = alice_api.post(
        "/api/v1/email-alerts", {"recipients": [bob_id], "min_confidence": 0.5}, format="json"
    )
    assert created.status_code == 201, created.content
    alert = created.json()
    assert alert["recipients"] == [bob_id]
    assert alert["min_confidence"] == 0.5
    assert [a["id"] for a in alice_api.get("/api/v1/email-alerts").json()["results"]] == [
        alert["id"]
    ]
    assert alice_api.get(URL).json()["results"] == []  # not a webhook
    assert alice_api.delete(f"{URL}/{alert['id']}").status_code == 404

    outsider = str(charlie.memberships.get().public_id)
    refused = alice_api.post("/api/v1/email-alerts", {"recipients": [outsider]}, format="json")
    assert refused.status_code == 400
    assert _client(bob).get("/api/v1/email-alerts").status_code == 403

    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        tested = alice_api.post(f"/api/v1/email-alerts/{alert['id']}/test")
    assert tested.status_code == 202
    assert [m.to for m in mail.outbox] == [["bob@acme.example"]]
    (delivery,) = alice_api.get(f"/api/v1/email-alerts/{alert['id']}/deliveries").json()["results"]
    assert delivery["state"] == "delivered"

    assert alice_api.delete(f"/api/v1/email-alerts/{alert['id']}").status_code == 204
    assert alice_api.get("/api/v1/email-alerts").json()["results"] == []


def test_alert_texts_say_what_the_rank_table_says():
    """One rank listed: it failed first, and no "others" followed from it."""
    rows = [{"rank": 1, "slug": "optimizer-state-oom", "first_error_line": 9, "collateral": False}]
    payload = {
        "type": "diagnosis.done",
        "data": {
            "link": "https://rootcause.example/diagnoses/1/",
            "failure": {"title": "OOM", "category": "memory", "confidence": 0.9},
            "root_cause": "Out of memory.",
            "initiating_rank": 1,
            "result": {"ranks": rows},
        },
    }

    _, body = payloads.email_text(payload)
    slack = json.dumps(payloads.slack_message(payload))

    assert "Rank 1 failed first." in body
    assert "followed" not in body
    assert "followed" not in slack
    assert "Rank 1 failed first." in slack
