"""GET /api/v1/failures: how often each failure class has been seen in the caller's organisation."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import SCOPE_DIAGNOSES_READ, actor_of
from accounts.selectors import require_scope
from accounts.serializers import paginated
from diagnosis.recurrence import RecurrencePages
from diagnosis.serializers import RecurrenceSerializer
from plumbing.pagination import paged_response


class FailureListApi(APIView):
    @extend_schema(
        operation_id="failures_list",
        responses={
            200: paginated(RecurrenceSerializer, "PaginatedRecurrenceList"),
            401: OpenApiResponse(description="problem+json"),
            403: OpenApiResponse(description="problem+json"),
        },
        description=(
            "Every failure class the organisation's finished diagnoses have named, the most "
            "recently seen first: first and last seen, diagnoses in the last 7 and 30 days, in "
            "all, and the latest few. Counts only the caller's organisation's diagnoses that the "
            "tier's history keeps. Paged by `limit` and `offset`. Needs the `diagnoses:read` "
            "scope."
        ),
    )
    def get(self, request: Request) -> Response:
        actor = actor_of(request)  # signed in: IsAuthenticated, the default
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        pages = RecurrencePages(actor.organization.id if actor.organization else None)
        return paged_response(self, request, pages, RecurrenceSerializer)
