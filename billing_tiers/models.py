"""Trust tiers, the daily quota ledger and Scale evaluations (codes, requests, evaluations).

No row says which tier an organisation is on: the tier is computed from facts (verified e-mail,
verified domain, an evaluation window) by `billing_tiers.entitlements.tier_for`
from the tier table (billing_tiers/tiers.py).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from accounts.models import Organization
from billing_tiers.tiers import tier_choices


class QuotaUsage(models.Model):
    """How many diagnoses one subject started on one UTC day: the counter charges race on.

    The subject is `org:<uuid>` for an organisation (its members and tokens share it),
    `user:<id>` for a person with no organisation yet, `anon:<hash>` for a visitor.
    """

    subject = models.CharField(max_length=80)
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # The row charges lock and increment; `INSERT … ON CONFLICT DO NOTHING` relies on it.
            models.UniqueConstraint(
                fields=["subject", "day"], name="quota_usage_unique_subject_day"
            ),
            models.CheckConstraint(condition=Q(used__gte=0), name="quota_usage_used_not_negative"),
        ]
        indexes = [
            # The daily purge of rows past the ledger's retention.
            models.Index(fields=["day"], name="quota_usage_day"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} on {self.day}: {self.used}"


class QuotaCharge(models.Model):
    """One unit charged to a subject's day; refunded at most once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.CharField(max_length=80)
    day = models.DateField()
    # The tier's name; choices read from the tier table when asked (a new row needs no migration).
    tier = models.CharField(max_length=16, choices=tier_choices)
    # What was charged for (the diagnosis id), so a failed pipeline can find the charge to refund.
    reference = models.CharField(max_length=64, blank=True)
    # The caller's Idempotency-Key: a second charge with the same key returns the first charge.
    idempotency_key = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    refunded_at = models.DateTimeField(null=True, blank=True)
    # Not a column: the day's count right after this charge took its unit (charge_quota sets it,
    # for the answer's quota headers); None on a charge read back from the database.
    used_today: int | None = None

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["reference"],
                condition=~Q(reference=""),
                name="quota_charge_unique_reference",
            ),
            models.UniqueConstraint(
                fields=["subject", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="quota_charge_unique_idempotency_key",
            ),
        ]
        indexes = [
            # The daily purge of rows past the ledger's retention.
            models.Index(fields=["day"], name="quota_charge_day"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} on {self.day}{' (refunded)' if self.refunded_at else ''}"


class EvaluationCode(models.Model):
    """A single-use Scale evaluation code. Only a keyed hash of the code is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    digest = models.CharField(max_length=64, unique=True)
    days = models.PositiveSmallIntegerField()
    daily_limit = models.PositiveIntegerField()
    # Redeemable until the end of this UTC day.
    redeem_by = models.DateField()
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    redeemed_at = models.DateTimeField(null=True, blank=True)
    redeemed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(days__gte=1), name="evaluation_code_days_positive"),
            models.CheckConstraint(
                condition=Q(daily_limit__gte=1), name="evaluation_code_daily_limit_positive"
            ),
        ]

    def __str__(self) -> str:
        state = "redeemed" if self.redeemed_at else f"redeem by {self.redeem_by}"
        return f"{self.days}-day code, {self.daily_limit}/day ({state})"


class Evaluation(models.Model):
    """An organisation on Scale from `starts_at` to `ends_at`; the window alone decides the tier."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="evaluations"
    )
    # One evaluation per code, enforced by the database as well as by the redeeming service.
    code = models.OneToOneField(EvaluationCode, on_delete=models.PROTECT, related_name="evaluation")
    redeemed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    daily_limit = models.PositiveIntegerField()
    # Set (compare-and-set) by the task that e-mails the owners before the end: sent once.
    ending_notice_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")), name="evaluation_ends_after_start"
            ),
        ]
        indexes = [
            # tier_for: the organisation's evaluation whose window contains now.
            models.Index(fields=["organization", "ends_at"], name="evaluation_org_ends"),
            # The ending-notice task: evaluations ending soon whose notice is not sent.
            models.Index(
                fields=["ends_at"],
                condition=Q(ending_notice_sent_at__isnull=True),
                name="evaluation_notice_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization} on Scale until {self.ends_at:%Y-%m-%d %H:%M} UTC"


class EvaluationRequest(models.Model):
    """A verified workplace asking staff for an evaluation code."""

    class Status(models.TextChoices):
        OPEN = "open"
        APPROVED = "approved"
        DECLINED = "declined"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="evaluation_requests"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    training = models.TextField(help_text="What they train (models, scale, frameworks).")
    team_size = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    decline_reason = models.TextField(blank=True)
    code = models.OneToOneField(
        EvaluationCode,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="request",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization"],
                condition=Q(status="open"),
                name="evaluation_request_one_open_per_org",
            ),
            models.CheckConstraint(
                condition=~Q(status="declined") | ~Q(decline_reason=""),
                name="evaluation_request_declined_has_reason",
            ),
            models.CheckConstraint(
                condition=Q(team_size__gte=1), name="evaluation_request_team_size_positive"
            ),
        ]
        indexes = [
            # The requests list of one organisation, newest first.
            models.Index(fields=["organization", "-created_at"], name="evaluation_request_org"),
        ]

    def __str__(self) -> str:
        return f"{self.organization}: {self.status}"
