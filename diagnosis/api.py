"""The diagnosis API: submit a log, read a diagnosis, the organisation's history, delete.

Visitors may submit without an account (their diagnosis is read back by its link, with the access
key of the answer); everyone else acts for their organisation. Every answer carries the caller's
daily quota in RateLimit-* and X-RateLimit-* headers.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import NotAuthenticated
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import SCOPE_DIAGNOSES_READ, SCOPE_DIAGNOSES_WRITE, Actor, actor_of
from accounts.selectors import require_scope
from billing_tiers.selectors import quota_status, rate_limit_headers
from config.problems import ApplicationError, PayloadTooLarge
from diagnosis import selectors, services
from diagnosis.intake import gunzip_if_needed, read_chunks
from diagnosis.models import Diagnosis
from diagnosis.pagination import HistoryPagination
from diagnosis.serializers import (
    DiagnosisSerializer,
    DiagnosisSummarySerializer,
    HistoryFilterSerializer,
)

PROBLEM = OpenApiResponse(description="problem+json")
QUOTA_NOTE = (
    " Every answer carries the caller's daily quota: `RateLimit-Limit`, `RateLimit-Remaining`, "
    "`RateLimit-Reset` (seconds until the reset) and `X-RateLimit-Limit`, "
    "`X-RateLimit-Remaining`, `X-RateLimit-Reset` (the reset as a Unix time)."
)
KEY = OpenApiParameter(
    "key",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="A visitor's diagnosis: the `access_key` of the answer that created it.",
)


def _signed_in(actor: Actor) -> Actor:
    if actor.is_anonymous:
        raise NotAuthenticated(
            "Sign in or send an API token: a visitor's diagnoses have no history."
        )
    return actor


class QuotaHeadersApiView(APIView):
    """Adds the caller's quota headers to every answer, errors included (a 429 brings its own)."""

    # The actor whose quota the headers show, when not the request's: a person who had no
    # organisation acts, once they submit, for the personal one made for them.
    quota_actor: Actor | None = None

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # A failed authentication (401) has no caller whose quota we could tell.
        if response.status_code != 401 and "RateLimit-Limit" not in response:
            status = quota_status(self.quota_actor or actor_of(request))
            for header, value in rate_limit_headers(status).items():
                response[header] = value
        return response


class DiagnosisListApi(QuotaHeadersApiView):
    # Visitors diagnose too; each method says who may call it.
    permission_classes = [AllowAny]
    # Multipart only: any other body is read as a raw log stream, never parsed or spooled to disk.
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="diagnoses_list",
        parameters=[
            HistoryFilterSerializer,
            OpenApiParameter("cursor", str, description="From `next` or `previous`."),
            OpenApiParameter("page_size", int, description="Rows per page, at most 100."),
        ],
        responses={
            200: inline_serializer(
                name="PaginatedDiagnosisSummaryList",
                fields={
                    "next": serializers.URLField(allow_null=True),
                    "previous": serializers.URLField(allow_null=True),
                    "results": DiagnosisSummarySerializer(many=True),
                },
            ),
            400: PROBLEM,
            401: PROBLEM,
            403: PROBLEM,
        },
        description=(
            "The organisation's diagnosis history, newest first, by cursor (follow `next`). "
            "Needs the `diagnoses:read` scope; kept as long as the tier keeps history." + QUOTA_NOTE
        ),
    )
    def get(self, request: Request) -> Response:
        actor = _signed_in(actor_of(request))
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        filters = HistoryFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        paginator = HistoryPagination()
        page = paginator.paginate_queryset(
            selectors.diagnoses_for(actor, filters.filters()), request, view=self
        )
        assert page is not None  # page_size is set
        return paginator.get_paginated_response(DiagnosisSummarySerializer(page, many=True).data)

    @extend_schema(
        operation_id="diagnoses_create",
        description=(
            "Submit a log. Send it as the raw request body (text/plain or "
            "application/octet-stream, optionally gzip-compressed) or as the `file` field of a "
            "multipart form. The answer is 202 with the queued diagnosis; poll its URL "
            "(`Location`). Each diagnosis takes one unit of the daily quota (429 when it is "
            "used); an `Idempotency-Key` header makes retries safe: the same key returns the "
            "same diagnosis and is not charged again. An API token needs the `diagnoses:write` "
            "scope. Without an account the diagnosis belongs to nobody: the answer's "
            "`access_key` (in `Location` too) reads it until `expires_at`, and is not shown "
            "again." + QUOTA_NOTE
        ),
        request={
            "text/plain": OpenApiTypes.STR,
            "application/octet-stream": OpenApiTypes.BINARY,
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            },
        },
        parameters=[
            OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False),
        ],
        responses={
            202: DiagnosisSerializer,
            200: DiagnosisSerializer,
            400: PROBLEM,
            403: PROBLEM,
            409: PROBLEM,
            413: PROBLEM,
            429: OpenApiResponse(
                description="problem+json: today's quota is used; see Retry-After, `reset` and "
                "`upgrade`"
            ),
        },
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_WRITE)
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > settings.ROOTCAUSE_MAX_LOG_BYTES + 64 * 1024:
            raise PayloadTooLarge(
                f"The log is larger than the limit of {settings.ROOTCAUSE_MAX_LOG_BYTES} bytes."
            )
        filename = ""
        if (request.content_type or "").startswith("multipart/form-data"):
            upload = request.FILES.get("file")
            if upload is None:
                raise ApplicationError("Send the log as the `file` field of the form.")
            filename = upload.name or ""
            chunks = upload.chunks()
        else:
            chunks = read_chunks(request._request)  # the WSGI body stream, read as it arrives
        submission = services.submit_diagnosis(
            actor=actor,
            chunks=gunzip_if_needed(chunks),
            source=Diagnosis.Source.CLI
            if request.headers.get("X-Rootcause-Client") == "cli"
            else Diagnosis.Source.API,
            filename=filename,
            idempotency_key=request.headers.get("Idempotency-Key", "")[:255],
        )
        self.quota_actor = submission.actor
        diagnosis = submission.diagnosis
        diagnosis.refresh_from_db()
        location = f"/api/v1/diagnoses/{diagnosis.id}"
        if submission.access_key:
            # Request logs leave query strings out, so the key is in no log line.
            location += f"?key={submission.access_key}"
        return Response(
            DiagnosisSerializer(diagnosis, context={"access_key": submission.access_key}).data,
            status=202 if submission.created else 200,
            headers={"Location": location},
        )


class DiagnosisDetailApi(QuotaHeadersApiView):
    # A visitor reads their diagnosis with its key; the methods check everyone else.
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="diagnoses_retrieve",
        parameters=[KEY],
        responses={200: DiagnosisSerializer, 403: PROBLEM, 404: PROBLEM},
        description=(
            "One diagnosis of the organisation, or a visitor's with its `key`. Needs the "
            "`diagnoses:read` scope. 404 for an id of another organisation, a wrong key or an "
            "expired link." + QUOTA_NOTE
        ),
    )
    def get(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        diagnosis = selectors.get_diagnosis_for(
            actor, diagnosis_id, key=request.query_params.get("key", "")
        )
        return Response(DiagnosisSerializer(diagnosis).data)

    @extend_schema(
        operation_id="diagnoses_destroy",
        responses={204: None, 401: PROBLEM, 403: PROBLEM, 404: PROBLEM},
        description=(
            "Delete a diagnosis of the organisation's history. Owners and admins; members and "
            "API tokens get 403." + QUOTA_NOTE
        ),
    )
    def delete(self, request: Request, diagnosis_id: str) -> Response:
        actor = _signed_in(actor_of(request))
        diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
        services.delete_diagnosis(actor=actor, diagnosis=diagnosis)
        return Response(status=204)
