"""A bundle's hang in alerts: the webhook event names the verdict and the culprit rank with the
frame it stands in, and the Slack message and the e-mail say the same."""

from __future__ import annotations

from typing import Any

import pytest
import standardwebhooks
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile

from alerts import payloads
from diagnosis.models import Diagnosis
from tests.alerts.test_alerts import _client, _webhook, receiver  # noqa: F401 - a fixture
from tests.diagnosis.test_bundles import DATALOADER, files_of

pytestmark = pytest.mark.django_db


def _diagnose_bundle(client: Any, capture: Any) -> str:
    uploads = [SimpleUploadedFile(name, data) for name, data in files_of(DATALOADER)]
    with capture(execute=True):
        response = client.post("/api/v1/diagnoses", {"file": uploads}, format="multipart")
    assert response.status_code == 202, response.content
    return str(response.json()["id"])


def test_the_webhook_event_names_the_verdict_and_the_culprit_and_its_frame(
    acme_scale,
    alice,
    receiver,  # noqa: F811 - the fixture imported above
    django_capture_on_commit_callbacks,
):
    client = _client(alice)
    hook = _webhook(client, f"{receiver.url}/hook")

    diagnosis_id = _diagnose_bundle(client, django_capture_on_commit_callbacks)

    ((_, headers, body),) = receiver.received
    headers = {k.lower(): v for k, v in headers.items()}
    data = standardwebhooks.Webhook(hook["secret"]).verify(body, headers)["data"]
    assert data["diagnosis_id"] == diagnosis_id
    assert data["failure"]["slug"] == "rank-stalled-before-collective"
    assert data["initiating_rank"] == 2
    hang = data["hang"]
    assert (hang["verdict"], hang["world_size"]) == ("rank-stalled-before-collective", 6)
    (culprit,) = hang["culprits"]
    assert culprit["rank"] == 2
    assert (culprit["frame"], culprit["where"]) == ("fetch_remote_sample", "program.py:50")
    assert culprit["meaning"].startswith("data loading")
    assert data["result"]["hang"]["stacks"]  # the whole section too


def test_slack_and_email_say_the_verdict_and_the_culprit(
    acme_scale, alice, bob, django_capture_on_commit_callbacks
):
    client = _client(alice)
    bob_id = str(bob.memberships.get().public_id)
    created = client.post("/api/v1/email-alerts", {"recipients": [bob_id]}, format="json")
    assert created.status_code == 201, created.content
    mail.outbox.clear()

    diagnosis_id = _diagnose_bundle(client, django_capture_on_commit_callbacks)

    (message,) = mail.outbox
    assert "Hang verdict: rank-stalled-before-collective on 6 ranks." in message.body
    assert "Culprit rank 2: in `fetch_remote_sample` at program.py:50 (data loading" in (
        message.body
    )
    slack = payloads.slack_message(
        payloads.diagnosis_payload(Diagnosis.objects.get(pk=diagnosis_id))
    )
    shown = " ".join(block["text"]["text"] for block in slack["blocks"] if "text" in block)
    assert "Culprit rank 2: in `fetch_remote_sample` at program.py:50" in shown


def test_a_log_diagnosis_has_no_hang_in_its_event():
    data = {"failure": {"title": "x"}, "initiating_rank": 1}

    assert payloads.hang_lines(data) == []
    assert "hang" not in str(payloads.email_text({"type": "diagnosis.done", "data": data}))
