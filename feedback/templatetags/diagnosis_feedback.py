"""`{% feedback_box diagnosis key %}`, the "Was this right?" form under a result, and
`{% entry_confirmations slug %}`, how often an entry's diagnoses were confirmed: the result page
and the encyclopedia's entry page load this library by name, and import nothing of this app."""

from __future__ import annotations

from django import template

from diagnosis.models import Diagnosis
from feedback import selectors
from feedback.forms import FeedbackForm
from feedback.views import catalogue_classes

register = template.Library()


@register.inclusion_tag("feedback/_feedback.html", takes_context=True)
def feedback_box(
    context: template.Context, diagnosis: Diagnosis, key: str = ""
) -> dict[str, object]:
    given = selectors.feedback_of(diagnosis)
    initial = (
        {
            "verdict": given.verdict,
            "correct_class": given.correct_slug if given.verdict == "wrong" else "",
            "note": given.note,
        }
        if given is not None
        else None
    )
    return {
        "diagnosis": diagnosis,
        "given": given,
        "key": key,
        "form": FeedbackForm(initial=initial, classes=catalogue_classes()),
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("feedback/_confirmations.html")
def entry_confirmations(slug: str) -> dict[str, object]:
    return {"confirmations": selectors.confirmations_for(slug)}
