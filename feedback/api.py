"""POST /api/v1/diagnoses/{id}/feedback: "Was this right?" on a diagnosis; GET reads it back."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import SCOPE_DIAGNOSES_READ, SCOPE_DIAGNOSES_WRITE, actor_of
from accounts.selectors import require_scope
from diagnosis import selectors as diagnosis_selectors
from feedback import selectors, services
from feedback.models import Feedback


def _problem(description: str) -> OpenApiResponse:
    return OpenApiResponse(description=f"problem+json: {description}")


KEY = OpenApiParameter(
    "key",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="A visitor's diagnosis: the `access_key` of the answer that created it.",
)


class FeedbackInputSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Feedback.Verdict.choices)
    correct_class = serializers.SlugField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="With `wrong`: the catalogue slug of the right class, or `none` for a run "
        "that did not fail.",
    )
    note = serializers.CharField(
        max_length=services.NOTE_MAX_CHARS,
        required=False,
        allow_blank=True,
        help_text="Optional; masked like the log before it is stored.",
    )

    def verdict_of(self) -> services.Verdict:
        data = self.validated_data
        return services.Verdict(
            right=data["verdict"] == Feedback.Verdict.RIGHT,
            correct_class=data.get("correct_class", ""),
            note=data.get("note", ""),
        )


class FeedbackSerializer(serializers.ModelSerializer):
    diagnosis = serializers.UUIDField(source="diagnosis_id", read_only=True)
    correct_class = serializers.CharField(
        source="correct_slug",
        help_text="The class the log is labelled with: the diagnosed one for `right` (`none` for "
        "a right no-match), the named one for `wrong`, empty if none was named.",
    )
    diagnosed_class = serializers.CharField(source="diagnosed_slug")

    class Meta:
        model = Feedback
        fields = [
            "diagnosis",
            "verdict",
            "diagnosed_class",
            "correct_class",
            "note",
            "created_at",
            "updated_at",
        ]


class DiagnosisFeedbackApi(APIView):
    # Visitors answer for their own diagnosis with its key; the methods check everyone else.
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="diagnoses_feedback_retrieve",
        parameters=[KEY],
        responses={
            200: FeedbackSerializer,
            401: _problem("A wrong or revoked API token."),
            403: _problem("The token lacks the `diagnoses:read` scope."),
            404: _problem("No such diagnosis (or another organisation's), or no feedback yet."),
        },
        description="The verdict given on the diagnosis, if any.",
    )
    def get(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        diagnosis = diagnosis_selectors.get_diagnosis_for(
            actor, diagnosis_id, key=request.query_params.get("key", "")
        )
        feedback = selectors.feedback_of(diagnosis)
        if feedback is None:
            raise Http404("No feedback was given on this diagnosis.")
        return Response(FeedbackSerializer(feedback).data)

    @extend_schema(
        operation_id="diagnoses_feedback_create",
        parameters=[KEY],
        request=FeedbackInputSerializer,
        responses={
            201: FeedbackSerializer,
            200: OpenApiResponse(FeedbackSerializer, description="An earlier verdict replaced."),
            400: _problem("No verdict, a class that is not in the catalogue, a note too long."),
            401: _problem("A wrong or revoked API token."),
            403: _problem("The token lacks the `diagnoses:write` scope."),
            404: _problem("No such diagnosis, another organisation's, or a wrong or expired key."),
            409: _problem("The diagnosis is not finished."),
        },
        description=(
            '"Was this right?": `right`, or `wrong` with, if known, the `correct_class` (a '
            "catalogue slug, or `none` for a run that did not fail), and an optional `note` "
            "(masked like the log). One verdict per diagnosis: a second replaces the first "
            "(200). Staff review verdicts; they label the logs of the corpus `manage.py "
            "export_feedback` writes, and the encyclopedia entry shows how often its diagnoses "
            "were confirmed. Needs the `diagnoses:write` scope; a visitor answers with the "
            "diagnosis's `key`. Counts against no quota."
        ),
    )
    def post(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_WRITE)
        diagnosis = diagnosis_selectors.get_diagnosis_for(
            actor, diagnosis_id, key=request.query_params.get("key", "")
        )
        data = FeedbackInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        replacing = selectors.feedback_of(diagnosis) is not None
        feedback = services.give_feedback(
            actor=actor, diagnosis=diagnosis, verdict=data.verdict_of()
        )
        return Response(FeedbackSerializer(feedback).data, status=200 if replacing else 201)
