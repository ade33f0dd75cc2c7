"""Writes of the alerts: endpoints and e-mail alerts, the outbox rows of a finished diagnosis,
test events and redeliveries.

The outbox row (`WebhookDelivery`) is written in the transaction that marks the diagnosis done:
`enqueue_alerts` runs from the hook `diagnosis.hooks.diagnosis_finished` (registered in
`alerts.apps`), one row per endpoint whose filters match; a unique constraint on (diagnosis,
webhook) makes a second completion write nothing. After commit the task
`alerts.tasks.deliver_webhook` (enqueued by its registered name) sends it through
`alerts.delivery.attempt_delivery`.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import celery
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from accounts.actors import Actor
from accounts.selectors import require_manager
from alerts.models import Webhook, WebhookDelivery
from alerts.payloads import EVENT_DIAGNOSIS_DONE, EVENT_TEST, Payload, diagnosis_payload
from alerts.selectors import require_alerts
from billing_tiers.selectors import entitlements_for_organization
from diagnosis.models import Diagnosis
from diagnosis.recurrence import recurrence_of
from plumbing import sql
from plumbing.links import absolute_url
from plumbing.problems import ApplicationError

User = get_user_model()

# The delivery task's registered name: it kept the name it had when it lived in workers/tasks.py,
# so that messages already queued (and scheduled retries, which wait in Redis for up to an hour)
# still find it after a deploy.
DELIVER_TASK = "workers.tasks.deliver_webhook"


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class WebhookFilters:
    category: str = ""
    failure_slug: str = ""
    min_confidence: float = 0.0
    first_occurrence_only: bool = False
    payload_format: str = Webhook.Format.STANDARD

    @classmethod
    # a form's cleaned_data or a serializer's validated_data: both dict[str, Any] in the stubs
    def from_data(cls, data: dict[str, Any]) -> WebhookFilters:
        """From a form's cleaned data or a serializer's validated data: what is absent or empty
        filters nothing."""
        return cls(
            category=data.get("category") or "",
            failure_slug=data.get("failure_slug") or "",
            min_confidence=data.get("min_confidence") or 0.0,
            first_occurrence_only=bool(data.get("first_occurrence_only")),
            payload_format=data.get("payload_format") or Webhook.Format.STANDARD,
        )


def create_webhook(*, actor: Actor, url: str, filters: WebhookFilters) -> Webhook:
    """A new endpoint with a generated secret (the caller shows it once)."""
    organization = require_manager(actor)
    require_alerts(organization, actor)
    if urlsplit(url).scheme not in ("http", "https"):
        raise ApplicationError("A webhook URL is http or https.")
    return Webhook.objects.create(
        organization=organization,
        url=url,
        secret=new_secret(),
        category=filters.category,
        failure_slug=filters.failure_slug,
        min_confidence=filters.min_confidence,
        first_occurrence_only=filters.first_occurrence_only,
        payload_format=filters.payload_format,
        created_by=actor.user,
    )


def create_email_alert(
    *, actor: Actor, member_ids: list[uuid.UUID | str], filters: WebhookFilters
) -> Webhook:
    """An e-mail alert to chosen members of the organisation (by their membership's public id),
    with filters."""
    organization = require_manager(actor)
    require_alerts(organization, actor)
    wanted = {str(member_id) for member_id in member_ids}
    members = list(
        User.objects.filter(
            is_active=True,
            memberships__organization=organization,
            memberships__public_id__in=wanted,
        )
    )
    if not members or len(members) != len(wanted):
        raise ApplicationError("Choose one or more members of the organisation.")
    with transaction.atomic():
        alert = Webhook.objects.create(
            organization=organization,
            channel=Webhook.Channel.EMAIL,
            secret="",
            category=filters.category,
            failure_slug=filters.failure_slug,
            min_confidence=filters.min_confidence,
            first_occurrence_only=filters.first_occurrence_only,
            created_by=actor.user,
        )
        alert.recipients.set(members)
    return alert


def delete_webhook(*, actor: Actor, webhook: Webhook) -> None:
    require_manager(actor)
    webhook.delete()


def _matches(webhook: Webhook, diagnosis: Diagnosis, payload: Payload) -> bool:
    failure = payload["data"].get("failure") or {}
    if webhook.failure_slug and webhook.failure_slug != diagnosis.failure_slug:
        return False
    if webhook.category and webhook.category != failure.get("category"):
        return False
    if webhook.min_confidence and float(failure.get("confidence") or 0) < webhook.min_confidence:
        return False
    if webhook.first_occurrence_only:
        seen = recurrence_of(diagnosis)
        # The diagnosis itself is one occurrence: first means the only one.
        if not diagnosis.failure_slug or (seen is not None and seen.total > 1):
            return False
    return True


# The organisation of a diagnosis, when the caller of enqueue_alerts does not know it.
_UNKNOWN = uuid.UUID(int=0)  # a sentinel, compared by identity; no organisation has it


def _alert_endpoints_sql(organization: str) -> str:
    """The organisation's webhooks and e-mail alerts, `organization` being SQL (a placeholder or a
    qualified column): one indexed lookup."""
    table = connection.ops.quote_name(Webhook._meta.db_table)
    return f"SELECT 1 FROM {table} alert WHERE alert.organization_id = {organization}"  # noqa: S608 - names only


def _has_alert_endpoints(organization_id: uuid.UUID | str) -> bool:
    """Whether the organisation has any webhook or e-mail alert, in SQL of its own because it
    runs for every finished diagnosis and Django's query compilation would cost more than the
    query."""
    return bool(
        sql.fetch_all(
            f"{_alert_endpoints_sql('%s')} LIMIT 1",
            [sql.param(Webhook, "organization", organization_id)],
        )
    )


def no_alert_endpoints_sql(organization: str) -> str:
    """The SQL condition under which `enqueue_alerts` does nothing for a diagnosis of the
    organisation whose id is `organization` (SQL, a qualified column): a visitor's diagnosis, or
    an organisation without a webhook or e-mail alert (`_has_alert_endpoints`'s lookup)."""
    return f"{organization} IS NULL OR NOT EXISTS ({_alert_endpoints_sql(organization)})"


def enqueue_alerts(
    diagnosis_id: uuid.UUID | str, *, organization_id: uuid.UUID | None = _UNKNOWN
) -> int:
    """Writes the outbox rows for a diagnosis that has just finished, in the caller's transaction,
    and enqueues their delivery after commit. Running it twice writes nothing more.

    A caller that knows the diagnosis's organisation (it never changes) passes it: a visitor's
    diagnosis then costs no query, and one of an organisation without alerts a single lookup;
    the row is read only when there is an endpoint to alert."""
    if organization_id is None:
        return 0  # a visitor's diagnosis alerts nobody
    if organization_id is not _UNKNOWN and not _has_alert_endpoints(organization_id):
        return 0
    diagnosis = Diagnosis.objects.filter(id=diagnosis_id).first()
    if diagnosis is None or diagnosis.organization_id is None:
        return 0  # a visitor's diagnosis alerts nobody
    webhooks = list(Webhook.objects.filter(organization_id=diagnosis.organization_id))
    if not webhooks or not entitlements_for_organization(diagnosis.organization).alerts:
        return 0
    payload = diagnosis_payload(diagnosis)
    # Rows already written (a completion that ran before) are neither written nor sent again.
    done = set(
        WebhookDelivery.objects.filter(diagnosis=diagnosis).values_list("webhook_id", flat=True)
    )
    rows = [
        WebhookDelivery(
            organization_id=diagnosis.organization_id,
            webhook=webhook,
            diagnosis=diagnosis,
            event_type=EVENT_DIAGNOSIS_DONE,
            payload=payload,
        )
        for webhook in webhooks
        if webhook.id not in done and _matches(webhook, diagnosis, payload)
    ]
    if not rows:
        return 0
    # The constraint settles a race between two completions: the loser's rows are skipped, and
    # only rows this call inserted are enqueued.
    WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    created = list(
        WebhookDelivery.objects.filter(id__in=[row.id for row in rows]).values_list("id", flat=True)
    )
    for delivery_id in created:
        enqueue_delivery(delivery_id)
    return len(created)


def enqueue_delivery(delivery_id: uuid.UUID, countdown: float = 0) -> None:
    signature = celery.signature(DELIVER_TASK, args=(str(delivery_id),))
    transaction.on_commit(lambda: signature.apply_async(countdown=countdown))


def send_test_event(*, actor: Actor, webhook: Webhook) -> WebhookDelivery:
    require_manager(actor)
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            organization=webhook.organization,
            webhook=webhook,
            event_type=EVENT_TEST,
            payload={
                "type": EVENT_TEST,
                "timestamp": timezone.now().isoformat(),
                "data": {"webhook_id": str(webhook.id), "link": absolute_url("/")},
            },
        )
        enqueue_delivery(delivery.id)
    return delivery


def redeliver(*, actor: Actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """Sends a delivery again, whatever became of it: same body, same `webhook-id`, a fresh day."""
    require_manager(actor)
    with transaction.atomic():
        WebhookDelivery.objects.filter(id=delivery.id).update(
            state=WebhookDelivery.State.PENDING,
            created_at=timezone.now(),
            finished_at=None,
            next_attempt_at=None,
        )
        enqueue_delivery(delivery.id)
    delivery.refresh_from_db()
    return delivery
