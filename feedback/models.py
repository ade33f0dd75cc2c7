"""The verdicts people give on their diagnoses: one per diagnosis, the latest answer kept."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Organization
from diagnosis.models import Diagnosis


class Feedback(models.Model):
    """ "Was this right?" on one diagnosis: right, or wrong (and, if known, the right class), with
    an optional note masked like the log. Deleted with its diagnosis, so with the organisation's
    history and a visitor's expired link."""

    class Verdict(models.TextChoices):
        RIGHT = "right"
        WRONG = "wrong"

    class Review(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"  # a staff member checked it: exported by --accepted-only too
        REJECTED = "rejected"  # spam or mistaken: neither exported nor counted on the entry

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    diagnosis = models.OneToOneField(Diagnosis, on_delete=models.CASCADE, related_name="feedback")
    # Null for a visitor's diagnosis, as the diagnosis's own.
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    given_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    # The class the diagnosis named ("" for no match), kept beside the verdict: the entry's
    # confirmation rate counts by it.
    diagnosed_slug = models.SlugField(max_length=100, blank=True)
    # The class the person says is right: a catalogue slug; "" when they said wrong without one.
    correct_slug = models.SlugField(max_length=100, blank=True)
    note = models.TextField(max_length=1000, blank=True)
    review = models.CharField(max_length=10, choices=Review.choices, default=Review.PENDING)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "feedback"
        indexes = [
            # The entry page's figure: verdicts on one class.
            models.Index(fields=["diagnosed_slug", "verdict"], name="feedback_by_class"),
            # The admin's queue: what staff have not looked at yet, oldest first.
            models.Index(fields=["review", "created_at"], name="feedback_review_queue"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(verdict="wrong") | ~models.Q(correct_slug=""),
                name="feedback_right_names_its_class",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} on {self.diagnosed_slug or 'no match'}"

    @property
    def label(self) -> str:
        """The class a corpus labels the log with: "" when unknown (wrong, no class named)."""
        return self.correct_slug
