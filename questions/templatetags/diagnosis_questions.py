"""`{% question_box diagnosis %}`: the follow-up question box under a result and its thread
(Scale), or what tier unlocks it, so that the result page's view need not know about it: the
result page (diagnosis/detail.html) loads this library by name, and diagnosis imports nothing of
the questions app."""

from __future__ import annotations

from django import template

from accounts.actors import actor_of
from billing_tiers.entitlements import entitlements_for
from diagnosis.models import Diagnosis
from questions.forms import QuestionForm

register = template.Library()


@register.inclusion_tag("questions/_questions.html", takes_context=True)
def question_box(context: template.Context, diagnosis: Diagnosis) -> dict[str, object]:
    request = context["request"]
    entitled = entitlements_for(actor_of(request))
    allowed = entitled.follow_up_questions and diagnosis.organization_id is not None
    return {
        "diagnosis": diagnosis,
        "allowed": allowed,
        "visitor": diagnosis.organization_id is None,
        "unlocking_tier": entitled.unlocked_by("follow_up_questions"),
        "current_tier": entitled.tier_label,
        "thread": list(diagnosis.questions.order_by("created_at")) if allowed else [],
        "form": QuestionForm(),
        "csrf_token": context.get("csrf_token"),
    }
