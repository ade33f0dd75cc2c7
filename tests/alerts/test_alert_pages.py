"""The Scale pages: the organisation's alerts (webhooks with the secret shown once, e-mail alerts to
chosen members through the same outbox, test events, the delivery log, redeliver), the follow-up
question box under a result, and the failure classes on the history page."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.db import transaction
from django.test import Client

from accounts.services import remove_member
from alerts import services
from alerts.models import Webhook, WebhookDelivery
from diagnosis.models import Diagnosis
from tests.alerts import test_alerts
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS
from tests.pages import diagnosed_on_the_page, signed_in

pytestmark = pytest.mark.django_db

# The alerts tests' local HTTP receiver (acme_scale, the Scale organisation, is tests/conftest.py's).
receiver = test_alerts.receiver

PAGE = "/settings/alerts/"


# --- Webhooks -----------------------------------------------------------------------------------


def test_a_manager_adds_a_webhook_and_sees_its_secret_once(acme_scale, alice, receiver):
    page = signed_in(alice)

    created = page.post(
        f"{PAGE}webhooks/",
        {
            "url": f"{receiver.url}/hook",
            "payload_format": "slack",
            "failure_slug": "optimizer-state-oom",
            "min_confidence": "0.5",
            "first_occurrence_only": "on",
        },
    )

    assert created.status_code == 201
    assert created["Cache-Control"] == "no-store"
    webhook = Webhook.objects.get(organization=acme_scale)
    assert webhook.secret in created.content.decode()
    assert (webhook.payload_format, webhook.failure_slug, webhook.min_confidence) == (
        "slack",
        "optimizer-state-oom",
        0.5,
    )
    assert webhook.first_occurrence_only
    again = page.get(PAGE).content.decode()
    assert f"{receiver.url}/hook" in again
    assert webhook.secret not in again
    assert "first occurrence only" in again


def test_an_invalid_url_is_refused_with_the_form(acme_scale, alice):
    response = signed_in(alice).post(f"{PAGE}webhooks/", {"url": "ftp://x.example/"})

    assert response.status_code == 400
    assert not Webhook.objects.exists()


def test_members_are_refused_and_other_tiers_are_told_which_unlocks_alerts(acme, alice, bob):
    off_scale = signed_in(alice).get(PAGE)
    assert off_scale.status_code == 403
    assert "Scale" in off_scale.content.decode()
    assert signed_in(bob).get(PAGE).status_code == 403
    assert signed_in(bob).post(f"{PAGE}webhooks/", {"url": "https://x.example/"}).status_code == 403
    assert not Webhook.objects.exists()


def test_test_event_delivery_log_and_redeliver_from_the_page(
    acme_scale, alice, receiver, django_capture_on_commit_callbacks
):
    webhook = Webhook.objects.create(
        organization=acme_scale, url=receiver.url, secret=services.new_secret()
    )
    page = signed_in(alice)
    receiver.script = [500]

    with django_capture_on_commit_callbacks(execute=True):
        tested = page.post(f"{PAGE}{webhook.id}/test/")
    assert tested.status_code == 302
    assert tested["Location"] == f"{PAGE}{webhook.id}/"

    log = page.get(tested["Location"]).content.decode()
    (delivery,) = WebhookDelivery.objects.filter(webhook=webhook)
    assert delivery.state == "pending"  # a 500: retried later
    assert str(delivery.id) in log
    assert "HTTP 500" in log
    assert "answer 500" in log  # the response excerpt

    with django_capture_on_commit_callbacks(execute=True):
        again = page.post(f"{PAGE}{webhook.id}/deliveries/{delivery.id}/redeliver/")
    assert again.status_code == 302
    delivery.refresh_from_db()
    assert delivery.state == "delivered"
    log = page.get(f"{PAGE}{webhook.id}/").content.decode()
    assert "HTTP 200" in log
    assert len({h["webhook-id"] for _, h, _ in receiver.received}) == 1


def test_another_organisations_alert_is_not_found(acme_scale, alice, charlie, umbrella):
    theirs = Webhook.objects.create(
        organization=umbrella, url="https://x.example/", secret=services.new_secret()
    )

    page = signed_in(alice)
    assert page.get(f"{PAGE}{theirs.id}/").status_code == 404
    assert page.post(f"{PAGE}{theirs.id}/delete/").status_code == 404
    assert Webhook.objects.filter(id=theirs.id).exists()


def test_removing_a_webhook(acme_scale, alice):
    webhook = Webhook.objects.create(
        organization=acme_scale, url="https://x.example/", secret=services.new_secret()
    )

    assert signed_in(alice).post(f"{PAGE}{webhook.id}/delete/").status_code == 302
    assert not Webhook.objects.exists()


# --- E-mail alerts ------------------------------------------------------------------------------


def _member(user: Any) -> str:
    return str(user.memberships.get().public_id)


def _email_alert(client: Client, *recipients: Any, **filters: str) -> Webhook:
    response = client.post(
        f"{PAGE}email/", {"recipients": [_member(u) for u in recipients], **filters}
    )
    assert response.status_code == 302, response.content
    return Webhook.objects.get(channel="email")


def test_chosen_members_get_one_masked_email_per_matching_diagnosis(
    acme_scale, alice, bob, django_capture_on_commit_callbacks
):
    page = signed_in(alice)
    alert = _email_alert(page, bob, failure_slug="optimizer-state-oom")
    assert "bob@acme.example" in page.get(PAGE).content.decode()
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = page.post("/", {"log_text": OOM_LOG})
    diagnosis_id = response["Location"].split("/")[2]

    (message,) = mail.outbox
    assert message.to == ["bob@acme.example"]
    assert "Optimizer State Memory Explosion" in message.subject
    assert f"/diagnoses/{diagnosis_id}/" in message.body
    assert "Root cause:" in message.body
    stored = Diagnosis.objects.get(id=diagnosis_id).result
    assert f"Root cause: {stored['root_cause']}" in message.body  # the stored, masked text
    for name, secret in PLANTED_SECRETS.items():  # the log's planted secrets: none leaves
        assert secret not in f"{message.subject}\n{message.body}", name
    (delivery,) = WebhookDelivery.objects.filter(webhook=alert)
    assert message.extra_headers["X-Rootcause-Delivery"] == str(delivery.id)
    assert delivery.state == "delivered"

    # A second completion writes and sends nothing.
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert services.enqueue_alerts(diagnosis_id) == 0
    assert len(mail.outbox) == 1


def test_an_email_alert_filters_like_a_webhook_and_skips_who_left(
    acme_scale, alice, bob, django_capture_on_commit_callbacks
):
    from accounts.actors import actor_for_person

    page = signed_in(alice)
    _email_alert(page, alice, min_confidence="0.999")
    first_only = _email_alert_second(page, alice, bob)
    remove_member(actor=actor_for_person(alice, acme_scale.pk), membership=bob.memberships.get())
    mail.outbox.clear()

    diagnosed_on_the_page(page, django_capture_on_commit_callbacks, OOM_LOG)
    diagnosed_on_the_page(page, django_capture_on_commit_callbacks, OOM_LOG)

    # Only the first-occurrence alert matched, once; bob left before it was sent.
    assert [m.to for m in mail.outbox] == [["alice@acme.example"]]
    assert WebhookDelivery.objects.filter(webhook=first_only).count() == 1


def _email_alert_second(client: Client, *recipients: Any) -> Webhook:
    response = client.post(
        f"{PAGE}email/",
        {"recipients": [_member(u) for u in recipients], "first_occurrence_only": "on"},
    )
    assert response.status_code == 302, response.content
    return Webhook.objects.get(channel="email", first_occurrence_only=True)


def test_recipients_must_be_members(acme_scale, alice, charlie, umbrella):
    response = signed_in(alice).post(f"{PAGE}email/", {"recipients": [_member(charlie)]})

    assert response.status_code == 400
    assert not Webhook.objects.filter(channel="email").exists()


def test_a_test_email_goes_through_the_outbox(
    acme_scale, alice, bob, django_capture_on_commit_callbacks
):
    page = signed_in(alice)
    alert = _email_alert(page, alice, bob)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        page.post(f"{PAGE}{alert.id}/test/")

    assert sorted(m.to[0] for m in mail.outbox) == ["alice@acme.example", "bob@acme.example"]
    assert all(m.subject == "rootcause: test alert" for m in mail.outbox)
    log = page.get(f"{PAGE}{alert.id}/").content.decode()
    assert "mailed to 2 members" in log


def test_the_settings_page_links_managers_to_the_alerts(acme, alice):
    assert 'href="/settings/alerts/"' in signed_in(alice).get("/settings/").content.decode()
