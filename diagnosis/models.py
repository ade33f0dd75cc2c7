from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Organization
from diagnosis.pipeline.stage import FINAL_STATUSES, Kind, Status, status_choices


class Diagnosis(models.Model):
    """One submitted log and what the pipeline made of it. Never holds the raw log.

    A diagnosis belongs to an organisation (its history), or, submitted by a visitor, to nobody:
    then it is reachable only by its link (the id and a random access key, of which only a
    digest is stored) until `expires_at`, and the periodic purge deletes it.
    """

    # queued, done and failed; a stage's status is its row's (diagnosis/pipeline/table.py).
    Status = Status
    # a log, or a bundle of one job's per-rank files (its stages: diagnosis/pipeline/table.py)
    Kind = Kind

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
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.LOG)
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
    labels: models.JSONField[list[str]] = models.JSONField(default=list, blank=True)

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
    # django-stubs' JSONField is generic in what it holds; stored JSON, read by its known keys
    result: models.JSONField[dict[str, object]] = models.JSONField(default=dict, blank=True)
    masking_counts: models.JSONField[dict[str, int]] = models.JSONField(default=dict, blank=True)
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
