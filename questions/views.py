"""The result page's question box posts here (Scale)."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.actors import actor_of
from accounts.selectors import Forbidden
from diagnosis import selectors
from plumbing.problems import ApplicationError
from questions import services
from questions.forms import QuestionForm


@login_required
@require_POST
def ask_question(request: HttpRequest, diagnosis_id: uuid.UUID) -> HttpResponse:
    """The result page's question box (Scale): the answer joins the thread under the result."""
    actor = actor_of(request)
    diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
    form = QuestionForm(request.POST)
    back = reverse("diagnosis-detail", args=[diagnosis.id]) + "#questions"
    if not form.is_valid():
        messages.error(request, "Write a question of up to 1000 characters.")
        return redirect(back)
    try:
        services.ask_question(
            actor=actor, diagnosis=diagnosis, question=form.cleaned_data["question"]
        )
    except Forbidden:
        raise
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    return redirect(back)
