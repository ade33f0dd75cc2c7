"""The result page's "Was this right?" form posts here."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.actors import actor_of
from diagnosis import selectors as diagnosis_selectors
from encyclopedia.selectors import list_entries
from feedback import services
from feedback.forms import FeedbackForm
from plumbing.problems import ApplicationError


def catalogue_classes() -> list[tuple[str, str]]:
    return [
        (slug, f"{title} ({slug})") for slug, title in list_entries().values_list("slug", "title")
    ]


@require_POST
def give_feedback(request: HttpRequest, diagnosis_id: uuid.UUID) -> HttpResponse:
    """Members answer for their organisation's diagnoses; a visitor for theirs, with its key."""
    key = request.POST.get("key", "")
    if not key and not request.user.is_authenticated:
        return redirect_to_login(reverse("diagnosis-detail", args=[diagnosis_id]))
    actor = actor_of(request)
    diagnosis = diagnosis_selectors.get_diagnosis_for(actor, diagnosis_id, key=key)
    back = reverse("diagnosis-detail", args=[diagnosis.id])
    back += (f"?key={key}" if key else "") + "#feedback"
    form = FeedbackForm(request.POST, classes=catalogue_classes())
    if not form.is_valid():
        messages.error(request, "Answer right or wrong; a note has at most 1000 characters.")
        return redirect(back)
    verdict = services.Verdict(
        right=form.cleaned_data["verdict"] == "right",
        correct_class=form.cleaned_data["correct_class"],
        note=form.cleaned_data["note"],
    )
    try:
        services.give_feedback(actor=actor, diagnosis=diagnosis, verdict=verdict)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Thank you: your answer was recorded.")
    return redirect(back)
