"""Reads of feedback: one diagnosis's verdict, and how often a class's diagnoses were confirmed."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from diagnosis.models import Diagnosis
from feedback.models import Feedback


@dataclass(frozen=True)
class Confirmations:
    """Verdicts on the diagnoses of one class (staff's rejected ones left out)."""

    confirmed: int
    rated: int

    @property
    def percent(self) -> int:
        return round(100 * self.confirmed / self.rated) if self.rated else 0


def confirmations_for(slug: str) -> Confirmations:
    counts = (
        Feedback.objects.filter(diagnosed_slug=slug)
        .exclude(review=Feedback.Review.REJECTED)
        .aggregate(
            rated=Count("id"), confirmed=Count("id", filter=Q(verdict=Feedback.Verdict.RIGHT))
        )
    )
    return Confirmations(confirmed=counts["confirmed"], rated=counts["rated"])


def feedback_of(diagnosis: Diagnosis) -> Feedback | None:
    return Feedback.objects.filter(diagnosis=diagnosis).first()


def exportable(*, accepted_only: bool) -> QuerySet[Feedback]:
    """Verdicts that label a log: a class is known (right, or wrong with the right one named);
    never a rejected one; only staff-accepted ones if asked. Oldest first, with the diagnosis."""
    rows = Feedback.objects.exclude(correct_slug="").exclude(review=Feedback.Review.REJECTED)
    if accepted_only:
        rows = rows.filter(review=Feedback.Review.ACCEPTED)
    return rows.select_related("diagnosis").order_by("created_at", "id")
