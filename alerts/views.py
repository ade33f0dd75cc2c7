"""Pages of the organisation's alerts (Scale; owners and admins): webhooks and e-mail alerts,
their delivery log, test and redeliver."""

from __future__ import annotations

import uuid
from typing import TypedDict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.actors import Actor, actor_of
from accounts.selectors import Forbidden, members_for, require_manager
from alerts import selectors, services
from alerts.forms import EmailAlertForm, WebhookForm
from alerts.models import Webhook
from encyclopedia.selectors import list_entries
from plumbing.problems import ApplicationError

ALERTS = "diagnosis-alerts"


class FilterChoices(TypedDict):
    failures: list[tuple[str, str]]
    categories: list[str]


def _filter_choices() -> FilterChoices:
    entries = list(list_entries().values_list("slug", "title", "category"))
    return {
        "failures": [(slug, title) for slug, title, _ in entries],
        "categories": sorted({category for _, _, category in entries}),
    }


def _member_choices(actor: Actor) -> list[tuple[str, str]]:
    """Members by their membership's public id (the integer keys stay internal)."""
    return [(str(m.public_id), m.user.email or m.user.get_username()) for m in members_for(actor)]


def _page(
    request: HttpRequest,
    *,
    webhook_form: WebhookForm | None = None,
    email_form: EmailAlertForm | None = None,
    status: int = 200,
    **extra: object,
) -> HttpResponse:
    actor = actor_of(request)
    try:
        webhooks = list(selectors.webhooks_for(actor))
    except Forbidden as exc:
        # A manager off Scale is told which tier unlocks alerts; a member is refused.
        require_manager(actor)
        return render(request, "alerts/alerts.html", {"refusal": exc.detail}, status=403)
    choices = _filter_choices()
    context = {
        "organization": actor.organization,
        "webhooks": webhooks,
        "email_alerts": list(selectors.email_alerts_for(actor)),
        "webhook_form": webhook_form or WebhookForm(**choices),
        "email_form": email_form or EmailAlertForm(members=_member_choices(actor), **choices),
        **extra,
    }
    return render(request, "alerts/alerts.html", context, status=status)


@login_required
@require_GET
def alerts_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


@login_required
@require_POST
def create_webhook(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    selectors.webhooks_for(actor)  # the role and the tier, before the form
    form = WebhookForm(request.POST, **_filter_choices())
    if not form.is_valid():
        return _page(request, webhook_form=form, status=400)
    try:
        webhook = services.create_webhook(
            actor=actor,
            url=form.cleaned_data["url"],
            filters=services.WebhookFilters.from_data(form.cleaned_data),
        )
    except ApplicationError as exc:
        form.add_error("url", exc.detail)
        return _page(request, webhook_form=form, status=400)
    # The secret is shown in this answer only: the page is not a redirect, and never cached.
    response = _page(request, created=webhook, status=201)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def create_email_alert(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    selectors.webhooks_for(actor)
    form = EmailAlertForm(request.POST, members=_member_choices(actor), **_filter_choices())
    if not form.is_valid():
        return _page(request, email_form=form, status=400)
    try:
        services.create_email_alert(
            actor=actor,
            member_ids=form.cleaned_data["recipients"],
            filters=services.WebhookFilters.from_data(form.cleaned_data),
        )
    except ApplicationError as exc:
        form.add_error("recipients", exc.detail)
        return _page(request, email_form=form, status=400)
    messages.success(request, "The e-mail alert was added.")
    return redirect(ALERTS)


def _alert(actor: Actor, alert_id: uuid.UUID) -> Webhook:
    """A webhook or an e-mail alert of the actor's organisation (404 otherwise)."""
    try:
        return selectors.get_webhook_for(actor, alert_id)
    except Http404:  # perhaps an e-mail alert
        return selectors.get_webhook_for(actor, alert_id, Webhook.Channel.EMAIL)


@login_required
@require_POST
def delete_alert(request: HttpRequest, alert_id: uuid.UUID) -> HttpResponse:
    actor = actor_of(request)
    services.delete_webhook(actor=actor, webhook=_alert(actor, alert_id))
    messages.success(request, "The alert was removed, with its delivery log.")
    return redirect(ALERTS)


@login_required
@require_POST
def test_alert(request: HttpRequest, alert_id: uuid.UUID) -> HttpResponse:
    actor = actor_of(request)
    webhook = _alert(actor, alert_id)
    services.send_test_event(actor=actor, webhook=webhook)
    messages.success(request, "A test event is on its way; its delivery is in the log below.")
    return redirect("diagnosis-alert-log", alert_id=webhook.id)


@login_required
@require_GET
def alert_log(request: HttpRequest, alert_id: uuid.UUID) -> HttpResponse:
    actor = actor_of(request)
    webhook = _alert(actor, alert_id)
    deliveries = list(selectors.deliveries_for(actor, webhook)[:100])
    return render(request, "alerts/alert_log.html", {"webhook": webhook, "deliveries": deliveries})


@login_required
@require_POST
def redeliver(request: HttpRequest, alert_id: uuid.UUID, delivery_id: uuid.UUID) -> HttpResponse:
    actor = actor_of(request)
    webhook = _alert(actor, alert_id)
    delivery = selectors.get_delivery_for(actor, webhook.id, delivery_id, webhook.channel)
    services.redeliver(actor=actor, delivery=delivery)
    messages.success(request, "The delivery is being sent again, with the same id.")
    return redirect("diagnosis-alert-log", alert_id=webhook.id)
