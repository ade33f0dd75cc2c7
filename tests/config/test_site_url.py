"""One setting, SITE_URL, for every link read away from the service: e-mails (verification,
invitation, password reset, evaluation codes), webhook events and alert e-mails. Without it, the
links point at the port `make run` serves (PORT); SITE_ROOT is still read as its former name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.exceptions import ImproperlyConfigured

from accounts.actors import actor_for_person
from accounts.services import invite_member, send_verification_email
from alerts import payloads
from alerts.models import WebhookDelivery
from alerts.services import WebhookFilters, create_webhook, send_test_event
from billing_tiers.services import (
    approve_evaluation_request,
    decline_evaluation_request,
    request_evaluation,
)
from config.env import env_site_url
from diagnosis.models import Diagnosis
from tests.billing_tiers.conftest import make_workplace
from tests.diagnosis.conftest import (  # noqa: F401 - fixtures, registered by being imported
    _catalogue,
    _staged_logs_do_not_outlive_the_test,
)
from tests.diagnosis.logs import OOM_LOG
from tests.manage_command import manage

ROOT = Path(__file__).resolve().parents[2]
SITE = "https://rc.test:9443"
LINK = re.compile(r"(https?://[^\s<>\"]+)")


@pytest.fixture
def site(settings: Any) -> str:
    settings.SITE_URL = SITE
    return SITE


def _links(text: str) -> list[str]:
    return LINK.findall(text)


def _only_on_site(text: str) -> list[str]:
    links = _links(text)
    assert links, text
    assert all(link.startswith(f"{SITE}/") for link in links), links
    return links


# --- The setting ------------------------------------------------------------------------------


def test_without_site_url_the_links_point_at_the_served_port(monkeypatch):
    monkeypatch.delenv("SITE_URL", raising=False)
    monkeypatch.delenv("SITE_ROOT", raising=False)

    assert env_site_url(9000) == "http://127.0.0.1:9000"
    assert env_site_url(8000) == "http://127.0.0.1:8000"


def test_site_url_wins_and_site_url_is_read_as_its_former_name(monkeypatch):
    monkeypatch.delenv("SITE_URL", raising=False)
    monkeypatch.setenv("SITE_ROOT", "https://old.example/")
    assert env_site_url(9000) == "https://old.example"

    monkeypatch.setenv("SITE_URL", "https://rootcause.example/")
    assert env_site_url(9000) == "https://rootcause.example"


@pytest.mark.parametrize("value", ["rootcause.example", "ftp://x.example", "https://", "http:///x"])
def test_a_site_url_without_scheme_or_host_fails_loudly(monkeypatch, value):
    monkeypatch.setenv("SITE_URL", value)

    with pytest.raises(ImproperlyConfigured, match="SITE_URL"):
        env_site_url(8000)


@pytest.mark.heavy  # a manage.py process of its own
def test_the_settings_take_the_port_of_make_run():
    code = "from django.conf import settings; print(settings.SITE_URL)"
    result = manage("shell", "-c", code, PORT="9000", SITE_URL="", SITE_ROOT="")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "http://127.0.0.1:9000"


def test_make_run_hands_its_port_to_the_server_and_the_settings():
    dry = subprocess.run(
        ["make", "-n", "--always-make", "run", "PORT=9000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (serve,) = [line for line in dry.splitlines() if "runserver" in line]
    assert "PORT=9000 " in serve
    assert serve.endswith("runserver 127.0.0.1:9000")


# --- Every link read away from the service ----------------------------------------------------


def test_the_verification_email_links_to_site_url(site, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        send_verification_email(user=alice)

    (message,) = mail.outbox
    (link,) = _only_on_site(str(message.body))
    assert "/accounts/verify/" in link


def test_the_invitation_email_links_to_site_url(
    site, acme, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        invite_member(actor=actor_for_person(alice, acme.pk), email="ada@lovelace.example")

    (message,) = mail.outbox
    (link,) = _only_on_site(str(message.body))
    assert "/accounts/invitations/accept/?token=" in link


def test_the_password_reset_email_links_to_site_url(site, alice, client):
    client.post("/accounts/password_reset/", {"email": alice.email})

    (message,) = mail.outbox
    (link,) = _only_on_site(str(message.body))
    assert "/accounts/reset/" in link


def test_the_evaluation_emails_link_to_site_url(site, acme, alice, bob):
    make_workplace(acme, alice, "acme.example")
    staff = get_user_model().objects.create_superuser("staff", "staff@rootcause.example", "pw")
    actor = actor_for_person(alice, acme.pk)
    first = request_evaluation(actor=actor, training="diffusion", team_size=3)
    decline_evaluation_request(request_id=first.id, decided_by=staff, reason="not yet")
    second = request_evaluation(actor=actor, training="diffusion", team_size=3)
    approve_evaluation_request(request_id=second.id, decided_by=staff)

    declined, issued = mail.outbox
    assert _only_on_site(str(declined.body)) == [f"{SITE}/evaluation/"]
    assert _only_on_site(str(issued.body)) == [f"{SITE}/evaluation/"]


def test_webhook_events_and_alert_emails_link_to_site_url(
    site, acme_scale, alice, django_capture_on_commit_callbacks, client
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/diagnoses", OOM_LOG, content_type="text/plain")
    assert response.status_code == 202, response.content
    diagnosis = Diagnosis.objects.get(id=response.json()["id"])

    payload = payloads.diagnosis_payload(diagnosis)
    assert payload["data"]["link"] == f"{SITE}/diagnoses/{diagnosis.id}/"
    _, body = payloads.email_text(payload)
    assert _only_on_site(body) == [f"{SITE}/diagnoses/{diagnosis.id}/"]
    slack = payloads.slack_message(payload)
    assert f"<{SITE}/diagnoses/{diagnosis.id}/>" in slack["text"]

    actor = actor_for_person(alice, acme_scale.pk)
    webhook = create_webhook(
        actor=actor, url="https://hooks.example/x", filters=WebhookFilters.from_data({})
    )
    test_event = send_test_event(actor=actor, webhook=webhook)
    stored = WebhookDelivery.objects.get(id=test_event.id).payload
    assert stored["data"]["link"] == f"{SITE}/"
