"""Organisation webhooks for alerts (Scale): endpoints, their delivery log, test and redeliver.

Owners and admins only; on another tier every call is 403 naming the tier that unlocks alerts.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from accounts.serializers import paginated
from alerts import selectors, services
from alerts.models import DeliveryAttempt, Webhook, WebhookDelivery
from billing_tiers.selectors import unlocking_label
from plumbing.pagination import paged_response

PROBLEM = OpenApiResponse(description="problem+json")
ERRORS: dict[int, OpenApiResponse] = {401: PROBLEM, 403: PROBLEM, 404: PROBLEM}


class WebhookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = [
            "id",
            "url",
            "category",
            "failure_slug",
            "min_confidence",
            "first_occurrence_only",
            "payload_format",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {
            "min_confidence": {"min_value": 0.0, "max_value": 1.0},
            "category": {"help_text": "Only failures of this category; empty for any."},
            "failure_slug": {"help_text": "Only this failure class; empty for any."},
            "first_occurrence_only": {
                "help_text": "Only the first diagnosis of a class in the organisation."
            },
            "payload_format": {
                "help_text": "`standard` (the event) or `slack` (a Slack-compatible message)."
            },
        }


class CreatedWebhookSerializer(WebhookSerializer):
    secret = serializers.CharField(
        help_text="The Standard Webhooks signing secret (`whsec_…`); shown once, in this answer."
    )

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ["attempted_at", "status_code", "latency_ms", "error", "response_excerpt"]


class DeliverySerializer(serializers.ModelSerializer):
    attempts = AttemptSerializer(many=True, source="attempt_log")

    class Meta:
        model = WebhookDelivery
        fields = ["id", "event_type", "diagnosis", "state", "created_at", "finished_at", "attempts"]


# One component for the two delivery logs (webhooks' and e-mail alerts'): made once, or the
# schema would hold two different classes of the same name.
DELIVERY_PAGE = paginated(DeliverySerializer, "PaginatedDeliveryList")


class WebhookListApi(APIView):
    @extend_schema(
        operation_id="webhooks_list",
        responses={200: paginated(WebhookSerializer, "PaginatedWebhookList"), **ERRORS},
        description="The organisation's webhooks, oldest first, paged by `limit` and `offset` "
        f"(owners and admins, {unlocking_label('alerts')} tier).",
    )
    def get(self, request: Request) -> Response:
        webhooks = selectors.webhooks_for(actor_of(request))
        return paged_response(self, request, webhooks, WebhookSerializer)

    @extend_schema(
        operation_id="webhooks_create",
        request=WebhookSerializer,
        responses={201: CreatedWebhookSerializer, 400: PROBLEM, **ERRORS},
        description=(
            "Add an endpoint. Each finished diagnosis that passes its filters is POSTed to it, "
            "signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`, "
            "`webhook-signature`) with the `secret` of this answer, which is not shown again."
        ),
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        selectors.webhooks_for(actor)  # the role and the tier, before the body
        data = WebhookSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        webhook = services.create_webhook(
            actor=actor,
            url=fields["url"],
            filters=services.WebhookFilters.from_data(fields),
        )
        return Response(CreatedWebhookSerializer(webhook).data, status=201)


class WebhookDetailApi(APIView):
    channel = Webhook.Channel.WEBHOOK

    @extend_schema(
        operation_id="webhooks_destroy",
        responses={204: None, **ERRORS},
        description="Remove an endpoint and its delivery log.",
    )
    def delete(self, request: Request, webhook_id: str) -> Response:
        actor = actor_of(request)
        webhook = selectors.get_webhook_for(actor, webhook_id, self.channel)
        services.delete_webhook(actor=actor, webhook=webhook)
        return Response(status=204)


class WebhookDeliveriesApi(APIView):
    channel = Webhook.Channel.WEBHOOK

    @extend_schema(
        operation_id="webhooks_deliveries_list",
        responses={200: DELIVERY_PAGE, **ERRORS},
        description="The endpoint's deliveries, newest first, with every attempt; paged by "
        "`limit` and `offset`.",
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        actor = actor_of(request)
        webhook = selectors.get_webhook_for(actor, webhook_id, self.channel)
        deliveries = selectors.deliveries_for(actor, webhook)
        return paged_response(self, request, deliveries, DeliverySerializer)


class WebhookTestApi(APIView):
    channel = Webhook.Channel.WEBHOOK

    @extend_schema(
        operation_id="webhooks_test",
        request=None,
        responses={202: DeliverySerializer, **ERRORS},
        description="Send a `webhook.test` event to the endpoint now.",
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        actor = actor_of(request)
        delivery = services.send_test_event(
            actor=actor, webhook=selectors.get_webhook_for(actor, webhook_id, self.channel)
        )
        delivery.refresh_from_db()
        return Response(DeliverySerializer(delivery).data, status=202)


class DeliveryRedeliverApi(APIView):
    channel = Webhook.Channel.WEBHOOK

    @extend_schema(
        operation_id="webhooks_deliveries_redeliver",
        request=None,
        responses={202: DeliverySerializer, **ERRORS},
        description="Send a delivery again: the same body and `webhook-id`.",
    )
    def post(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        actor = actor_of(request)
        delivery = services.redeliver(
            actor=actor,
            delivery=selectors.get_delivery_for(actor, webhook_id, delivery_id, self.channel),
        )
        return Response(DeliverySerializer(delivery).data, status=202)


# --- E-mail alerts ------------------------------------------------------------------------------


class EmailAlertSerializer(serializers.ModelSerializer):
    recipients = serializers.ListField(
        child=serializers.UUIDField(),
        min_length=1,
        max_length=200,
        help_text="The members to e-mail: their ids in `/api/v1/organization/members`.",
    )

    class Meta:
        model = Webhook
        fields = [
            "id",
            "recipients",
            "category",
            "failure_slug",
            "min_confidence",
            "first_occurrence_only",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = WebhookSerializer.Meta.extra_kwargs

    def to_representation(self, instance: Webhook) -> dict[str, object]:
        data = {
            field: getattr(instance, field)
            for field in ("category", "failure_slug", "min_confidence", "first_occurrence_only")
        }
        # Prefetched by selectors.email_alerts_for: no query per alert.
        members = [
            str(membership.public_id)
            for user in instance.recipients.all()
            for membership in user.memberships.all()
            if membership.organization_id == instance.organization_id
        ]
        return {
            "id": str(instance.id),
            "recipients": sorted(members),
            **data,
            "created_at": serializers.DateTimeField().to_representation(instance.created_at),
        }


class EmailAlertListApi(APIView):
    @extend_schema(
        operation_id="email_alerts_list",
        responses={200: paginated(EmailAlertSerializer, "PaginatedEmailAlertList"), **ERRORS},
        description="The organisation's e-mail alerts, oldest first, paged by `limit` and "
        f"`offset` (owners and admins, {unlocking_label('alerts')} tier).",
    )
    def get(self, request: Request) -> Response:
        email_alerts = selectors.email_alerts_for(actor_of(request))
        return paged_response(self, request, email_alerts, EmailAlertSerializer)

    @extend_schema(
        operation_id="email_alerts_create",
        request=EmailAlertSerializer,
        responses={201: EmailAlertSerializer, 400: PROBLEM, **ERRORS},
        description=(
            "Add an e-mail alert: each finished diagnosis that passes its filters is e-mailed to "
            "the chosen members (masked text and the link to the result), through the same "
            "outbox as webhooks."
        ),
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        selectors.email_alerts_for(actor)  # the role and the tier, before the body
        data = EmailAlertSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        alert = services.create_email_alert(
            actor=actor,
            member_ids=fields["recipients"],
            filters=services.WebhookFilters.from_data(fields),
        )
        created = selectors.email_alerts_for(actor).get(id=alert.id)
        return Response(EmailAlertSerializer(created).data, status=201)


class EmailAlertDetailApi(WebhookDetailApi):
    channel = Webhook.Channel.EMAIL

    @extend_schema(
        operation_id="email_alerts_destroy",
        responses={204: None, **ERRORS},
        description="Remove an e-mail alert and its delivery log.",
    )
    def delete(self, request: Request, webhook_id: str) -> Response:
        return super().delete(request, webhook_id)


class EmailAlertDeliveriesApi(WebhookDeliveriesApi):
    channel = Webhook.Channel.EMAIL

    @extend_schema(
        operation_id="email_alerts_deliveries_list",
        responses={200: DELIVERY_PAGE, **ERRORS},
        description="The e-mail alert's deliveries, newest first, with every attempt; paged by "
        "`limit` and `offset`.",
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        return super().get(request, webhook_id)


class EmailAlertTestApi(WebhookTestApi):
    channel = Webhook.Channel.EMAIL

    @extend_schema(
        operation_id="email_alerts_test",
        request=None,
        responses={202: DeliverySerializer, **ERRORS},
        description="E-mail a test alert to the chosen members now.",
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        return super().post(request, webhook_id)
