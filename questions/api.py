"""Follow-up questions on a diagnosis (Scale): ask one, read the thread."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import SCOPE_DIAGNOSES_READ, SCOPE_DIAGNOSES_WRITE, actor_of
from accounts.selectors import require_scope
from accounts.serializers import paginated
from billing_tiers.selectors import unlocking_label
from diagnosis import selectors
from plumbing.pagination import paged_response
from questions import services
from questions.models import DiagnosisQuestion

PROBLEM = OpenApiResponse(description="problem+json")


class QuestionInputSerializer(serializers.Serializer):
    question = serializers.CharField(max_length=1000)


class CitationSerializer(serializers.Serializer):
    slug = serializers.CharField(
        help_text="The catalogue entry quoted; empty for this diagnosis's own fix or evidence."
    )
    section = serializers.CharField(help_text="quick_answer, mechanism, fix, faq-1, evidence, …")
    title = serializers.CharField()
    link = serializers.CharField(
        help_text="The section's anchor: on the entry's encyclopedia page, or on this "
        "diagnosis's result page (#fix, #evidence)."
    )
    score = serializers.FloatField(help_text="Its BM25 score against the question.")


class QuestionSerializer(serializers.ModelSerializer):
    citations = CitationSerializer(many=True, help_text="The sections quoted, best first.")

    class Meta:
        model = DiagnosisQuestion
        fields = ["id", "question", "answer", "citations", "created_at"]


class DiagnosisQuestionsApi(APIView):
    @extend_schema(
        operation_id="diagnoses_questions_list",
        responses={
            200: paginated(QuestionSerializer, "PaginatedQuestionList"),
            401: PROBLEM,
            403: PROBLEM,
            404: PROBLEM,
        },
        description="The diagnosis's follow-up questions and their answers, oldest first, paged "
        "by `limit` and `offset`.",
    )
    def get(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
        thread = diagnosis.questions.order_by("created_at", "id")
        return paged_response(self, request, thread, QuestionSerializer)

    @extend_schema(
        operation_id="diagnoses_questions_create",
        request=QuestionInputSerializer,
        responses={
            201: QuestionSerializer,
            400: PROBLEM,
            401: PROBLEM,
            403: PROBLEM,
            404: PROBLEM,
        },
        description=(
            "Ask a follow-up question. The answer quotes the sections of the failure's catalogue "
            "entry, its related entries and the log's masked evidence that match it best (BM25), "
            "with links, or says that nothing known answers it. "
            f"{unlocking_label('follow_up_questions')} tier only (403 otherwise); "
            "counts against no quota. Needs the `diagnoses:write` scope."
        ),
    )
    def post(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_WRITE)
        data = QuestionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
        asked = services.ask_question(
            actor=actor, diagnosis=diagnosis, question=data.validated_data["question"]
        )
        return Response(QuestionSerializer(asked).data, status=201)
