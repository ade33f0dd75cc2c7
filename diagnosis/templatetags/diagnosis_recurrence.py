"""`{% recurrence_of diagnosis as recurrence %}`: the partial _recurrence.html reads the figures
itself, so the result page's view and layout need not know about them."""

from __future__ import annotations

from django import template

from accounts.models import Organization
from diagnosis.models import Diagnosis
from diagnosis.recurrence import Recurrence, recurrence_of, recurrences_for

register = template.Library()


@register.simple_tag(name="recurrence_of")
def recurrence_tag(diagnosis: Diagnosis) -> Recurrence | None:
    if diagnosis.status != Diagnosis.Status.DONE:
        return None
    return recurrence_of(diagnosis)


@register.simple_tag(name="recurrences_of_organization")
def recurrences_tag(organization: Organization | None) -> list[Recurrence]:
    """Every failure class the organisation has seen: two queries, however long its history."""
    return recurrences_for(organization.pk) if organization is not None else []
