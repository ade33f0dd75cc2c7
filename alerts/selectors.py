"""Reads of the alerts: an organisation's webhooks and e-mail alerts, their delivery log, and
the access check every one of them goes through (owners and admins, on a tier with alerts)."""

from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import Http404

from accounts.actors import Actor
from accounts.models import Organization
from accounts.selectors import Forbidden, require_manager
from alerts.models import Webhook, WebhookDelivery
from billing_tiers.selectors import entitlements_for, entitlements_for_organization


def require_alerts(organization: Organization, actor: Actor | None = None) -> None:
    entitled = entitlements_for(actor) if actor else entitlements_for_organization(organization)
    if not entitled.alerts:
        raise Forbidden(
            f"Alerts come with the {entitled.unlocked_by('alerts')} tier "
            f"(this organisation is on {entitled.tier_label})."
        )


def webhooks_for(actor: Actor, channel: str = Webhook.Channel.WEBHOOK) -> QuerySet[Webhook]:
    """The organisation's webhooks (or e-mail alerts): owners and admins, on a tier with alerts."""
    organization = require_manager(actor)
    require_alerts(organization, actor)
    return Webhook.objects.filter(organization=organization, channel=channel).order_by("created_at")


def email_alerts_for(actor: Actor) -> QuerySet[Webhook]:
    return webhooks_for(actor, Webhook.Channel.EMAIL).prefetch_related(
        "recipients", "recipients__memberships"
    )


def get_webhook_for(
    actor: Actor, webhook_id: uuid.UUID | str, channel: str = Webhook.Channel.WEBHOOK
) -> Webhook:
    try:
        return webhooks_for(actor, channel).get(id=webhook_id)
    except (Webhook.DoesNotExist, ValueError, ValidationError):
        raise Http404("No such webhook.") from None


def get_delivery_for(
    actor: Actor,
    webhook_id: uuid.UUID | str,
    delivery_id: uuid.UUID | str,
    channel: str = Webhook.Channel.WEBHOOK,
) -> WebhookDelivery:
    webhook = get_webhook_for(actor, webhook_id, channel)
    try:
        return webhook.deliveries.get(id=delivery_id)
    except (WebhookDelivery.DoesNotExist, ValueError, ValidationError):
        raise Http404("No such delivery.") from None


def deliveries_for(actor: Actor, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """The delivery log of an endpoint, newest first, with each attempt."""
    require_manager(actor)
    return webhook.deliveries.order_by("-created_at").prefetch_related("attempt_log")
