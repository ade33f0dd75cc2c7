"""The quota and evaluation endpoints: parse, call one service or selector, render."""

from __future__ import annotations

import uuid
from datetime import datetime

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import api as accounts_api
from accounts import serializers as accounts_serializers
from accounts.actors import Actor, actor_of
from billing_tiers import selectors, services
from billing_tiers.models import Evaluation, EvaluationRequest
from billing_tiers.throttles import RedeemPerAddressThrottle, RedeemPerUserThrottle
from billing_tiers.tiers import evaluation_tier, tier_choices
from plumbing.pagination import paged_response

PROBLEM = OpenApiResponse(description="problem+json")
HEADERS_NOTE = (
    " The quota is also in the headers `RateLimit-Limit`, `RateLimit-Remaining`, "
    "`RateLimit-Reset` (seconds until the reset) and `X-RateLimit-Limit`, "
    "`X-RateLimit-Remaining`, `X-RateLimit-Reset` (the reset as a Unix time)."
)


class QuotaSerializer(serializers.Serializer):
    tier = serializers.ChoiceField(choices=tier_choices())
    limit = serializers.IntegerField(help_text="Diagnoses allowed per UTC day.")
    used = serializers.IntegerField()
    remaining = serializers.IntegerField()
    reset = serializers.DateTimeField(help_text="The next UTC midnight.")


class QuotaApi(APIView):
    # Anyone may ask, visitors included: a visitor's quota is counted by their address hash.
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="quota_retrieve",
        responses={200: QuotaSerializer},
        description=(
            "Today's diagnosis allowance of the caller: the organisation for people and tokens "
            "(members share it), the client address for visitors. Reading it never charges."
            + HEADERS_NOTE
        ),
    )
    def get(self, request: Request) -> Response:
        status = selectors.quota_status(actor_of(request))
        return Response(QuotaSerializer(status).data, headers=selectors.rate_limit_headers(status))


class EvaluationRequestOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvaluationRequest
        fields = [
            "id",
            "status",
            "training",
            "team_size",
            "decline_reason",
            "created_at",
            "decided_at",
        ]


class EvaluationRequestInputSerializer(serializers.Serializer):
    training = serializers.CharField(
        max_length=2000, help_text="What you train: models, scale, frameworks."
    )
    team_size = serializers.IntegerField(min_value=1, max_value=1_000_000)


class EvaluationRequestListApi(APIView):
    @extend_schema(
        operation_id="evaluation_requests_list",
        responses={
            200: accounts_serializers.paginated(
                EvaluationRequestOutputSerializer, "PaginatedEvaluationRequestList"
            ),
            403: PROBLEM,
        },
        description="The organisation's evaluation requests, newest first, paged by `limit` and "
        "`offset` (owners and admins).",
    )
    def get(self, request: Request) -> Response:
        requests = selectors.evaluation_requests_for(actor_of(request))
        return paged_response(self, request, requests, EvaluationRequestOutputSerializer)

    @extend_schema(
        operation_id="evaluation_requests_create",
        request=EvaluationRequestInputSerializer,
        responses={
            201: EvaluationRequestOutputSerializer,
            400: PROBLEM,
            403: PROBLEM,
            409: PROBLEM,
        },
        description=(
            "Ask for a Scale evaluation code. Owners and admins of a verified workplace; one open "
            "request per organisation. Staff approve it (the code is e-mailed to you) or decline "
            "it with a reason; follow its `status` here."
        ),
    )
    def post(self, request: Request) -> Response:
        data = EvaluationRequestInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evaluation_request = services.request_evaluation(
            actor=actor_of(request),
            training=data.validated_data["training"],
            team_size=data.validated_data["team_size"],
        )
        return Response(EvaluationRequestOutputSerializer(evaluation_request).data, status=201)


class EvaluationRequestDetailApi(APIView):
    @extend_schema(
        operation_id="evaluation_requests_retrieve",
        responses={200: EvaluationRequestOutputSerializer, 403: PROBLEM, 404: PROBLEM},
    )
    def get(self, request: Request, request_id: uuid.UUID) -> Response:
        evaluation_request = selectors.get_evaluation_request_for(actor_of(request), request_id)
        return Response(EvaluationRequestOutputSerializer(evaluation_request).data)


class EvaluationOutputSerializer(serializers.ModelSerializer):
    tier = serializers.SerializerMethodField()

    class Meta:
        model = Evaluation
        fields = ["id", "tier", "starts_at", "ends_at", "daily_limit"]

    def get_tier(self, evaluation: Evaluation) -> str:
        return evaluation_tier().name


class RedeemInputSerializer(serializers.Serializer):
    code = serializers.CharField(max_length=64, help_text="SCALE-XXXX-XXXX-XXXX")


class EvaluationRedeemApi(APIView):
    throttle_classes = [RedeemPerUserThrottle, RedeemPerAddressThrottle]

    @extend_schema(
        operation_id="evaluation_redeem",
        request=RedeemInputSerializer,
        responses={
            201: EvaluationOutputSerializer,
            400: OpenApiResponse(description="problem+json: the code is wrong (`code_invalid`)"),
            403: OpenApiResponse(
                description="problem+json: not an owner or admin, or not a verified workplace "
                "(`not_verified_workplace`)"
            ),
            409: OpenApiResponse(
                description="problem+json: the code was used (`code_used`) or an evaluation is "
                "running (`evaluation_active`)"
            ),
            410: OpenApiResponse(description="problem+json: past its redeem-by date"),
            429: OpenApiResponse(description="problem+json: too many attempts; see Retry-After"),
        },
        description=(
            "Redeem a Scale evaluation code: the organisation is on Scale from now for the "
            "code's days, with the code's daily allowance, then returns to its previous tier by "
            "itself. Owners and admins of a verified workplace; attempts are throttled per person "
            "and per address."
        ),
    )
    def post(self, request: Request) -> Response:
        data = RedeemInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evaluation = services.redeem_evaluation_code(
            actor=actor_of(request), code=data.validated_data["code"]
        )
        return Response(EvaluationOutputSerializer(evaluation).data, status=201)


# --- /api/v1/me, with the tier and the quota ----------------------------------------------------
# accounts answers who is calling; the tier and the quota are this app's, which sits above it, so
# it extends accounts' serializers and view (docs/accounts.md) and config/urls.py routes
# /api/v1/me here.


class MeOrganizationSerializer(accounts_serializers.MeOrganizationSerializer):
    """The actor's organisation, with its tier and the end of its running evaluation."""

    tier = serializers.SerializerMethodField(help_text="The organisation's trust tier.")
    evaluation_ends_at = serializers.SerializerMethodField(
        help_text="The end of the running Scale evaluation, or null."
    )

    @extend_schema_field(serializers.ChoiceField(choices=tier_choices()))
    def get_tier(self, actor: Actor) -> str:
        return selectors.tier_for(actor)

    def get_evaluation_ends_at(self, actor: Actor) -> datetime | None:
        assert actor.organization is not None
        evaluation = selectors.active_evaluation(actor.organization)
        return None if evaluation is None else evaluation.ends_at


class MeSerializer(accounts_serializers.MeSerializer):
    """Who is calling, the organisation they act for with its tier, and today's quota."""

    organization = MeOrganizationSerializer(source="*", allow_null=True)
    quota = QuotaSerializer(
        source="*",
        help_text="Today's diagnosis allowance: the organisation's, or a person's with none yet.",
    )

    def to_representation(self, instance: Actor) -> dict[str, object]:
        body = super().to_representation(instance)
        body["quota"] = QuotaSerializer(selectors.quota_status(instance)).data
        return body


class MeApi(accounts_api.MeApi):
    serializer_class = MeSerializer

    @extend_schema(
        operation_id="me",
        responses={200: MeSerializer, 401: PROBLEM},
        description=(
            "The signed-in person (or the calling API token), the organisation they act for "
            "with its tier and running evaluation, and today's quota."
        ),
    )
    def get(self, request: Request) -> Response:
        return super().get(request)
