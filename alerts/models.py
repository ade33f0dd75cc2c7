"""The alerts' tables. They were created by the diagnosis app and keep its table names
(`db_table`): moving the models here moved no row (migrations alerts/0001 and diagnosis/0011)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Organization
from diagnosis.models import Diagnosis


class Webhook(models.Model):
    """An organisation's alert on finished diagnoses, with its filters: an HTTP endpoint (a
    webhook) or e-mails to chosen members. Both go through the same outbox (WebhookDelivery)."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook"
        EMAIL = "email"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="webhooks"
    )
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.WEBHOOK)
    # A webhook's endpoint; empty for an e-mail alert.
    url = models.URLField(max_length=500, blank=True)
    # An e-mail alert's recipients: members of the organisation (checked again when sending).
    recipients = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="email_alerts"
    )
    # The Standard Webhooks signing secret (`whsec_` + base64): shown once, needed to sign.
    secret = models.CharField(max_length=100)
    # Filters; empty or zero means "any".
    category = models.CharField(max_length=64, blank=True)
    failure_slug = models.SlugField(max_length=100, blank=True)
    min_confidence = models.FloatField(default=0.0)
    first_occurrence_only = models.BooleanField(default=False)

    class Format(models.TextChoices):
        STANDARD = "standard"  # the event as JSON, signed the Standard Webhooks way
        SLACK = "slack"  # {"text": …} for a Slack-compatible incoming webhook (signed too)

    payload_format = models.CharField(max_length=16, choices=Format.choices, default="standard")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "diagnosis_webhook"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(min_confidence__gte=0, min_confidence__lte=1),
                name="webhook_min_confidence_fraction",
            ),
            models.CheckConstraint(
                condition=models.Q(channel="email") | ~models.Q(url=""),
                name="webhook_has_url",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.organization_id})"


class WebhookDelivery(models.Model):
    """The outbox: one event for one endpoint, written in the transaction that finishes the
    diagnosis, then sent (and retried) by a task until it is delivered or given up."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # given up: a 4xx other than 429, a refused address, or a day passed

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # Null for a test event.
    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, null=True, blank=True)
    event_type = models.CharField(max_length=32)
    # django-stubs' JSONField is generic in what it holds; stored JSON, read by its known keys
    payload: models.JSONField[dict[str, object]] = models.JSONField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # A pending delivery's next attempt is due then (null: now); a message that comes earlier
    # (a duplicate) does nothing.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A task is sending it until then; another copy of the task waits for the lease to expire
    # (the holder may have been killed) rather than send it alongside.
    leased_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "diagnosis_webhookdelivery"
        constraints = [
            # Exactly one alert per finished diagnosis and endpoint, however often the completion
            # or the outbox write runs.
            models.UniqueConstraint(
                fields=["diagnosis", "webhook"],
                condition=models.Q(diagnosis__isnull=False),
                name="webhook_delivery_once_per_diagnosis",
            ),
        ]
        indexes = [
            # The delivery log of one endpoint, newest first.
            models.Index(fields=["webhook", "-created_at"], name="webhook_delivery_log"),
            # The sweeper: pending deliveries whose message may have been lost.
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(state="pending"),
                name="webhook_delivery_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.webhook_id} ({self.state})"


class DeliveryAttempt(models.Model):
    """One HTTP attempt of a delivery, for the delivery log admins read."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    attempted_at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    # Why there was no answer (a timeout, a refused address), never a secret.
    error = models.CharField(max_length=255, blank=True)
    # The first bytes of the receiver's answer.
    response_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        db_table = "diagnosis_deliveryattempt"

    def __str__(self) -> str:
        return f"{self.delivery_id}: {self.status_code or self.error}"
