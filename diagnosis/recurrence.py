"""Recurrence of failure classes within one organisation: first and last seen, how often lately,
and the last few diagnoses of each class. Reads only; every query is scoped to one organisation,
so no figure ever counts another tenant's diagnoses."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, F, Max, Min, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from diagnosis.models import Diagnosis

# How many of a class's latest diagnoses each figure lists.
RECENT_PER_CLASS = 5


@dataclass(frozen=True)
class RecentDiagnosis:
    id: uuid.UUID
    created_at: datetime


@dataclass(frozen=True)
class Recurrence:
    """One failure class in one organisation, as of `now`."""

    failure_slug: str
    first_seen: datetime
    last_seen: datetime
    last_7_days: int
    last_30_days: int
    total: int
    recent: list[RecentDiagnosis] = field(default_factory=list)


def _diagnosed(organization_id: uuid.UUID) -> QuerySet[Diagnosis]:
    # Only finished diagnoses that named a class: a failed or unmatched one is no occurrence.
    # Served by the index diagnosis_org_class_recurrence (organization, failure_slug, created_at).
    return Diagnosis.objects.filter(
        organization_id=organization_id, status=Diagnosis.Status.DONE
    ).exclude(failure_slug="")


def recurrences_for(
    organization_id: uuid.UUID | None,
    *,
    failure_slug: str = "",
    now: datetime | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Recurrence]:
    """Every failure class the organisation (by id) has seen (or only `failure_slug`), the most
    recently seen first, or the `limit` of them from `offset`: one aggregate query for the
    figures, one for the latest diagnoses of the classes returned."""
    if organization_id is None:
        return []
    now = now or timezone.now()
    rows = _diagnosed(organization_id)
    if failure_slug:
        rows = rows.filter(failure_slug=failure_slug)
    ordered = (
        rows.values("failure_slug")
        .annotate(
            first_seen=Min("created_at"),
            last_seen=Max("created_at"),
            last_7_days=Count("id", filter=Q(created_at__gt=now - timedelta(days=7))),
            last_30_days=Count("id", filter=Q(created_at__gt=now - timedelta(days=30))),
            total=Count("id"),
        )
        .order_by("-last_seen", "failure_slug")
    )
    figures = list(ordered[offset : offset + limit] if limit is not None else ordered[offset:])
    if not figures:
        return []
    if limit is not None:
        rows = rows.filter(failure_slug__in=[figure["failure_slug"] for figure in figures])
    latest = (
        rows.annotate(
            position=Window(
                RowNumber(),
                partition_by=[F("failure_slug")],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(position__lte=RECENT_PER_CLASS)
        .order_by("failure_slug", "-created_at")
        .values_list("failure_slug", "id", "created_at")
    )
    recent: dict[str, list[RecentDiagnosis]] = {}
    for slug, diagnosis_id, created_at in latest:
        recent.setdefault(slug, []).append(RecentDiagnosis(diagnosis_id, created_at))
    return [
        Recurrence(**figure, recent=recent.get(figure["failure_slug"], [])) for figure in figures
    ]


class RecurrencePages:
    """An organisation's recurrences as a sequence the API's paginator counts and slices: a page
    costs the count and the two queries of that page's classes, not every class's."""

    def __init__(self, organization_id: uuid.UUID | None) -> None:
        self.organization_id = organization_id

    def count(self) -> int:
        if self.organization_id is None:
            return 0
        return _diagnosed(self.organization_id).values("failure_slug").distinct().count()

    def __getitem__(self, page: slice) -> list[Recurrence]:
        start = page.start or 0
        limit = None if page.stop is None else max(0, page.stop - start)
        return recurrences_for(self.organization_id, offset=start, limit=limit)


def recurrence_of(diagnosis: Diagnosis, *, now: datetime | None = None) -> Recurrence | None:
    """The figures of the diagnosis's class in its organisation; None for a visitor's diagnosis
    (it belongs to no organisation) or one that named no class."""
    if diagnosis.organization_id is None or not diagnosis.failure_slug:
        return None
    found = recurrences_for(diagnosis.organization_id, failure_slug=diagnosis.failure_slug, now=now)
    return found[0] if found else None
