"""`{% recurrence_of diagnosis as recurrence %}`: the partial _recurrence.html reads the figures
itself, so the result page's view and layout need not know about them."""

from __future__ import annotations

from django import template

from diagnosis.models import Diagnosis
from diagnosis.recurrence import Recurrence, recurrence_of

register = template.Library()


@register.simple_tag(name="recurrence_of")
def recurrence_tag(diagnosis: Diagnosis) -> Recurrence | None:
    if diagnosis.status != Diagnosis.Status.DONE:
        return None
    return recurrence_of(diagnosis)
