"""The /evaluation/ page: request a Scale evaluation, follow the request, redeem a code."""

from __future__ import annotations

import math

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.actors import actor_of
from billing_tiers import selectors, services
from billing_tiers.forms import EvaluationRequestForm, RedeemForm
from billing_tiers.throttles import redeem_attempt_wait
from billing_tiers.tiers import evaluation_tier
from plumbing.problems import ApplicationError


def _page(
    request: HttpRequest,
    *,
    request_form: forms.Form | None = None,
    redeem_form: forms.Form | None = None,
    redeem_error: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "overview": selectors.evaluation_overview(actor_of(request)),
        "request_form": request_form or EvaluationRequestForm(),
        "redeem_form": redeem_form or RedeemForm(),
        "redeem_error": redeem_error,
        "evaluation_days": settings.EVALUATION_DAYS,
        "scale_daily": evaluation_tier().daily_diagnoses,
    }
    return render(request, "billing_tiers/evaluation.html", context, status=status)


@login_required
def evaluation(request: HttpRequest) -> HttpResponse:
    return _page(request)


@login_required
@require_POST
def evaluation_request(request: HttpRequest) -> HttpResponse:
    form = EvaluationRequestForm(request.POST)
    if not form.is_valid():
        return _page(request, request_form=form, status=400)
    try:
        services.request_evaluation(
            actor=actor_of(request),
            training=form.cleaned_data["training"],
            team_size=form.cleaned_data["team_size"],
        )
    except ApplicationError as exc:
        form.add_error(None, exc.detail)
        return _page(request, request_form=form, status=exc.status_code)
    messages.success(request, "Request sent. Staff will answer it by e-mail.")
    return redirect("evaluation")


@login_required
@require_POST
def evaluation_redeem(request: HttpRequest) -> HttpResponse:
    wait = redeem_attempt_wait(request)
    if wait is not None:
        minutes = max(1, math.ceil(wait / 60))
        response = _page(
            request, redeem_error=f"Too many attempts: try again in {minutes} min.", status=429
        )
        response["Retry-After"] = str(math.ceil(wait))
        return response
    form = RedeemForm(request.POST)
    if not form.is_valid():
        return _page(request, redeem_form=form, status=400)
    try:
        evaluation = services.redeem_evaluation_code(
            actor=actor_of(request), code=form.cleaned_data["code"]
        )
    except ApplicationError as exc:
        # A fresh form: the page does not echo a code back.
        return _page(request, redeem_error=exc.detail, status=exc.status_code)
    messages.success(
        request, f"Welcome to Scale: your evaluation runs until {evaluation.ends_at:%Y-%m-%d} UTC."
    )
    return redirect("evaluation")
