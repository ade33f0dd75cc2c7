from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from accounts.models import Organization
from diagnosis.pipeline.stage import FINAL_STATUSES, Status, status_choices


class Diagnosis(models.Model):
    """One submitted log and what the pipeline made of it. Never holds the raw log.

    A diagnosis belongs to an organisation (its history), or, submitted by a visitor, to nobody:
    then it is reachable only by its link (the id and a random access key, of which only a
    digest is stored) until `expires_at`, and the periodic purge deletes it.
    """

    # queued, done and failed; a stage's status is its row's (diagnosis/pipeline/table.py).
    Status = Status

    class Source(models.TextChoices):
        WEB = "web"
        API = "api"
        CLI = "cli"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Null only for a visitor's diagnosis (the constraint below says so). No index of its own:
    # the history's and the recurrence's indexes (Meta) begin with it and serve its lookups.
    organization = models.ForeignKey(
        Organization,
        on_delete=models.CASCADE,
        related_name="diagnoses",
        null=True,
        blank=True,
        db_index=False,
    )
    # A visitor's: the keyed hash of their address (accounts.actors.anonymous_subject), so a
    # retried Idempotency-Key is recognised; the address itself is never kept.
    anonymous_subject = models.CharField(max_length=64, blank=True)
    # A visitor's: SHA-256 of the access key in the result's link; the key is shown once.
    access_key_digest = models.CharField(max_length=64, blank=True)
    # A visitor's: when the link stops working and the purge deletes the row.
    expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="diagnoses",
    )
    source = models.CharField(max_length=8, choices=Source.choices)
    # A file name the caller gave, masked like the log before it is stored.
    filename = models.CharField(max_length=255, blank=True)
    size_bytes = models.BigIntegerField()
    # HMAC-SHA256 of the caller's Idempotency-Key (keyed with SECRET_KEY): a key can hold anything
    # a CI system puts in it, so the key itself is never stored. Cleared when the key's window
    # (24 h) has passed, so the key makes a new diagnosis.
    idempotency_key_digest = models.CharField(max_length=64, blank=True)
    # SHA-256 of the log as staged (after gzip decompression): a retry with the same key and
    # another log is refused.
    body_digest = models.CharField(max_length=64, blank=True)

    # What a CI job tells about itself, masked like the log before it is stored.
    job = models.CharField(max_length=200, blank=True)
    run_url = models.CharField(max_length=500, blank=True)
    commit = models.CharField(max_length=100, blank=True)
    labels: models.JSONField[Any] = models.JSONField(default=list, blank=True)

    # The choices are the stage table's statuses, read through a callable: a new stage's row
    # changes them without a migration.
    status = models.CharField(max_length=16, choices=status_choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    # A stage holds the row until this instant; past it another worker may take the stage over.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Fences a stage's writes: a worker whose lease was taken over cannot complete the stage.
    lease_token = models.UUIDField(null=True, blank=True)
    failure_reason = models.CharField(max_length=255, blank=True)

    outcome = models.CharField(max_length=16, blank=True)
    # Looked up within an organisation only (the recurrence's index): no index of its own, which
    # every write of the row (a submission, then each stage's claim and completion) would update.
    failure_slug = models.SlugField(max_length=100, blank=True, db_index=False)
    result: models.JSONField[Any] = models.JSONField(default=dict, blank=True)
    masking_counts: models.JSONField[Any] = models.JSONField(default=dict, blank=True)
    catalogue_version = models.CharField(max_length=32, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "diagnoses"
        constraints = [
            # A retried request with the same Idempotency-Key returns the first diagnosis.
            models.UniqueConstraint(
                fields=["organization", "idempotency_key_digest"],
                condition=~models.Q(idempotency_key_digest=""),
                name="diagnosis_unique_idempotency_key",
            ),
            # The same for a visitor's, per address hash (the organisation is null: NULLs differ).
            models.UniqueConstraint(
                fields=["anonymous_subject", "idempotency_key_digest"],
                condition=models.Q(organization__isnull=True)
                & ~models.Q(idempotency_key_digest=""),
                name="diagnosis_unique_anonymous_idempotency_key",
            ),
            # Either an organisation's (kept in its history), or a visitor's: reachable by its
            # link only, until it expires.
            models.CheckConstraint(
                condition=(
                    models.Q(
                        organization__isnull=False,
                        anonymous_subject="",
                        access_key_digest="",
                        expires_at__isnull=True,
                    )
                    | (
                        models.Q(organization__isnull=True, expires_at__isnull=False)
                        & ~models.Q(anonymous_subject="")
                        & ~models.Q(access_key_digest="")
                    )
                ),
                name="diagnosis_organization_or_anonymous",
            ),
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="diagnosis_progress_percent"
            ),
        ]
        indexes = [
            # The history list: one organisation's diagnoses, newest first.
            models.Index(fields=["organization", "-created_at"], name="diagnosis_org_history"),
            # The recurrence figures (diagnosis.recurrence.recurrences_for): one organisation's
            # diagnoses of each failure class, aggregated over created_at and ranked by it.
            models.Index(
                fields=["organization", "failure_slug", "created_at"],
                name="diagnosis_org_class_recurrence",
            ),
            # The sweepers: active diagnoses whose last progress is older than a deadline. Only
            # active rows are in it: a finished diagnosis (most rows) leaves it with its last
            # write, and the index stays the size of what is in flight. Named by what is not
            # active (done, failed), which a new stage does not change; PostgreSQL proves that
            # the sweepers' `status IN (<the active statuses>)` implies it.
            models.Index(
                fields=["status", "updated_at"],
                condition=~models.Q(status__in=FINAL_STATUSES),
                name="diagnosis_unfinished_updated",
            ),
            # The purge: visitors' diagnoses past their link's lifetime.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(organization__isnull=True),
                name="diagnosis_anonymous_expiry",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"

    @property
    def run_link(self) -> str:
        """The CI run's address if it can be a link: http(s), and not cut by masking (a masked
        host leaves a placeholder that leads nowhere)."""
        url = self.run_url
        return url if url.startswith(("https://", "http://")) and "<" not in url else ""


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
    payload: models.JSONField[Any] = models.JSONField()
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

    def __str__(self) -> str:
        return f"{self.delivery_id}: {self.status_code or self.error}"


class DiagnosisQuestion(models.Model):
    """A follow-up question on a diagnosis and the answer retrieved for it (its thread)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="questions")
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    question = models.CharField(max_length=1000)
    answer = models.TextField()
    # The sections quoted: [{"slug", "section", "title", "link", "score"}], best first.
    citations: models.JSONField[Any] = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # The thread of one diagnosis, oldest first.
            models.Index(fields=["diagnosis", "created_at"], name="diagnosis_question_thread"),
        ]

    def __str__(self) -> str:
        return self.question[:60]
