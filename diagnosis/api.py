from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Organization
from config.problems import ApplicationError, PayloadTooLarge
from diagnosis import selectors, services
from diagnosis.intake import gunzip_if_needed, read_chunks
from diagnosis.models import Diagnosis
from diagnosis.serializers import DiagnosisSerializer, DiagnosisSummarySerializer

PROBLEM = OpenApiResponse(description="problem+json")


class NoOrganization(ApplicationError):
    status_code = 403
    title = "No organisation"


def _organization(request: Request) -> Organization:
    organization = selectors.organization_for(request.user)
    if organization is None:
        raise NoOrganization("You are not a member of any organisation.")
    return organization


class DiagnosisListApi(APIView):
    # Multipart only: any other body is read as a raw log stream, never parsed or spooled to disk.
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="diagnoses_list",
        responses={200: DiagnosisSummarySerializer(many=True)},
        description="The organisation's diagnosis history, newest first.",
    )
    def get(self, request: Request) -> Response:
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(
            selectors.diagnoses_for(request.user), request, view=self
        )
        return paginator.get_paginated_response(DiagnosisSummarySerializer(page, many=True).data)

    @extend_schema(
        operation_id="diagnoses_create",
        description=(
            "Submit a log. Send it as the raw request body (text/plain or "
            "application/octet-stream, optionally gzip-compressed) or as the `file` field of a "
            "multipart form. The answer is 202 with the queued diagnosis; poll its URL. "
            "An `Idempotency-Key` header makes retries safe: the same key returns the same "
            "diagnosis."
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
        responses={202: DiagnosisSerializer, 200: DiagnosisSerializer, 400: PROBLEM, 413: PROBLEM},
    )
    def post(self, request: Request) -> Response:
        organization = _organization(request)
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
        diagnosis, created = services.submit_diagnosis(
            organization=organization,
            chunks=gunzip_if_needed(chunks),
            source=Diagnosis.Source.CLI
            if request.headers.get("X-Rootcause-Client") == "cli"
            else Diagnosis.Source.API,
            created_by=request.user if isinstance(request.user, get_user_model()) else None,
            filename=filename,
            idempotency_key=request.headers.get("Idempotency-Key", "")[:255],
        )
        diagnosis.refresh_from_db()
        return Response(
            DiagnosisSerializer(diagnosis).data,
            status=202 if created else 200,
            headers={"Location": f"/api/v1/diagnoses/{diagnosis.id}"},
        )


class DiagnosisDetailApi(APIView):
    @extend_schema(
        operation_id="diagnoses_retrieve",
        responses={200: DiagnosisSerializer, 404: PROBLEM},
    )
    def get(self, request: Request, diagnosis_id: str) -> Response:
        diagnosis = selectors.get_diagnosis_for(request.user, diagnosis_id)
        return Response(DiagnosisSerializer(diagnosis).data)
