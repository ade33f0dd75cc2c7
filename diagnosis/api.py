"""The diagnosis API: submit a log, read a diagnosis, the organisation's history, delete.

Visitors may submit without an account (their diagnosis is read back by its link, with the access
key of the answer); everyone else acts for their organisation. Every answer carries the caller's
daily quota in RateLimit-* and X-RateLimit-* headers.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiRequest,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, serializers
from rest_framework.exceptions import NotAuthenticated
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from accounts.actors import (
    SCOPE_DIAGNOSES_READ,
    SCOPE_DIAGNOSES_WRITE,
    Actor,
    actor_of,
    forget_actor,
)
from accounts.models import ApiToken
from accounts.selectors import require_scope
from accounts.throttles import CHECKED_WITH_THROTTLES, FailedTokens
from billing_tiers.entitlements import Entitlements
from billing_tiers.selectors import QuotaStatus, quota_status, rate_limit_headers
from diagnosis import selectors, services, token_facts
from diagnosis.intake import gunzip_if_needed
from diagnosis.models import Diagnosis
from diagnosis.pagination import HistoryPagination
from diagnosis.serializers import (
    DiagnosisSerializer,
    DiagnosisSubmissionSerializer,
    DiagnosisSummarySerializer,
    HistoryFilterSerializer,
    WaitSerializer,
)
from diagnosis.throttles import (
    SubmissionsPerAddress,
    SubmissionsPerOrganization,
    concurrency_bounds,
    throttle_waits,
    upload_slot,
)
from diagnosis.uploads import FILE_CONTENT_TYPES, METADATA_HEADERS, METADATA_SCHEMAS, upload_of
from plumbing.concurrency import ProcessSlots, Slot, client_slots
from plumbing.parsers import JSONParser
from plumbing.problems import PayloadTooLarge
from plumbing.ratelimit import GateRefused


def _problem(description: str) -> OpenApiResponse:
    # The body is the Problem component: plumbing.problems documents every error response so.
    return OpenApiResponse(description=f"problem+json: {description}")


PROBLEM = OpenApiResponse(description="problem+json")
# Every answer of these calls, errors included, carries the caller's quota (but a failed
# authentication, which has no caller: hence not required).
QUOTA_HEADERS = [
    OpenApiParameter(header, int, OpenApiParameter.HEADER, response=True, description=text)
    for header, text in (
        ("RateLimit-Limit", "Diagnoses a day of the caller's tier."),
        ("RateLimit-Remaining", "Diagnoses left today."),
        ("RateLimit-Reset", "Seconds until the quota resets (00:00 UTC)."),
        ("X-RateLimit-Limit", "As RateLimit-Limit."),
        ("X-RateLimit-Remaining", "As RateLimit-Remaining."),
        ("X-RateLimit-Reset", "The reset as a Unix time, in seconds."),
    )
] + [
    OpenApiParameter(
        "Retry-After",
        int,
        OpenApiParameter.HEADER,
        response=[429],
        description="Seconds until the quota resets.",
    )
]
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


# The metadata of a raw-body submission, by field: its header and what it is.
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
    # Its tier, when the call worked it out already (a submission): it takes a few queries.
    quota_entitlements: Entitlements | None = None
    # The quota itself, when the call knows it already (a submission's charge returns the count).
    quota_known: QuotaStatus | None = None

    def finalize_response(
        self, request: Request, response: Response, *args: object, **kwargs: object
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # A failed authentication (401) has no caller whose quota we could tell.
        if response.status_code != 401 and "RateLimit-Limit" not in response:
            status = self.quota_known or quota_status(
                self.quota_actor or actor_of(request), entitlements=self.quota_entitlements
            )
            for header, value in rate_limit_headers(status).items():
                response[header] = value
        return response


class DiagnosisListApi(QuotaHeadersApiView):
    # Visitors diagnose too; each method says who may call it.
    permission_classes = [AllowAny]
    # Multipart and JSON; any other accepted body is read as a raw log stream, never parsed or
    # spooled to disk.
    parser_classes = [MultiPartParser, JSONParser]
    upload_slot: Slot | None = None

    def get_throttles(self) -> list[BaseThrottle]:
        # Submissions have burst limits per address and per organisation; reading the history
        # has none beyond the defaults.
        if self.request.method == "POST":
            return [SubmissionsPerAddress(), SubmissionsPerOrganization()]
        return super().get_throttles()

    def initial(self, request: Request, *args: object, **kwargs: object) -> None:
        if request.method == "POST":
            # A valid token's check of its address' failures is made below, with the burst
            # limits; a wrong token is still checked before it counts (accounts/throttles.py).
            setattr(request, CHECKED_WITH_THROTTLES, True)
            token_facts.read_with_token(request)  # the token with its organisation's facts
        super().initial(request, *args, **kwargs)

    def check_throttles(self, request: Request) -> None:
        if request.method != "POST":
            super().check_throttles(request)
            return
        # The failed-token count and both burst limits are read in one cache round trip, and
        # the limits written in one: not five. The upload's slot (held while the body is read,
        # given back with the answer: `post`) is taken in that round trip too, once both limits
        # admit the request.
        throttles = [SubmissionsPerAddress(), SubmissionsPerOrganization()]
        gate = FailedTokens() if isinstance(request.auth, ApiToken) else None
        self.upload_slot = upload_slot(request)
        try:
            waits = throttle_waits(throttles, request, self, gate=gate, slot=self.upload_slot)
        except GateRefused as refused:
            # Answered as a wrong token is during the wait: as nobody, nothing counted, so the
            # answer cannot tell a right guess from a wrong one.
            request.user, request.auth = AnonymousUser(), None
            forget_actor(request)
            raise exceptions.Throttled(wait=refused.wait) from None
        if waits:
            raise exceptions.Throttled(wait=max((w for w in waits if w is not None), default=None))

    @extend_schema(
        operation_id="diagnoses_list",
        parameters=[
            HistoryFilterSerializer,
            OpenApiParameter("cursor", str, description="From `next` or `previous`."),
            OpenApiParameter(
                "page_size",
                {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                description="Rows per page; above 100, 100.",
            ),
            *QUOTA_HEADERS,
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
            "Submit a log, in one of three forms: the raw request body (`text/plain` or "
            "`application/octet-stream`, optionally gzip-compressed; the metadata then comes in "
            "`X-Rootcause-*` headers), the `file` field of a multipart form (metadata in form "
            'fields), or JSON `{"log": …, "filename": …}` (metadata as fields). The '
            "metadata (`filename`, `job`, `run_url`, `commit`, `labels`) is optional, masked "
            "like the log and shown in the history; a form or JSON field wins over the header of "
            "the same name. Header values are percent-decoded (send UTF-8 percent-encoded); "
            "`X-Rootcause-Labels` is a comma-separated list, and in a form `labels` may be "
            "repeated.\n\n"
            "Several `file` parts of one form, or one archive (.tar.gz, .tar, .zip), are a "
            "bundle: one job's per-rank logs, flight-recorder and stack dumps, diagnosed "
            "together for a hang (`kind` `bundle`, the result's `hang` section), within the "
            "bundle limits (413 `bundle-too-large`; 400 `bundle-rejected` for an unreadable "
            "archive or a pickle that builds anything but plain data).\n\n"
            "The answer is 202 with the queued diagnosis; poll its URL (`Location`), e.g. "
            "with `?wait=30`. Each diagnosis takes one unit of the daily quota (429 when it is "
            "used). An `Idempotency-Key` makes retries safe for 24 hours: the same key with the "
            "same log returns the same diagnosis (200) and is not charged again; the same key "
            "with another log is 422; after 24 hours the key makes a new diagnosis. An API "
            "token needs the `diagnoses:write` scope. Without an account the diagnosis belongs "
            "to nobody: the answer's `access_key` (in `Location` too) reads it until "
            "`expires_at`, and is not shown again (a visitor's repeated key is 409)." + QUOTA_NOTE
        ),
        request={
            "text/plain": {"type": "string", "minLength": 1, "description": "The log."},
            "application/octet-stream": {
                "type": "string",
                "format": "binary",
                "minLength": 1,
                "description": "The log's bytes (UTF-8 text), gzip-compressed or not; other "
                "bytes (an image, a binary) are 400 `log-rejected`.",
            },
            "multipart/form-data": OpenApiRequest(
                {
                    "type": "object",
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "The log; repeated, the files of one bundle.",
                        },
                        "kind": {
                            "type": "string",
                            "enum": ["log", "bundle"],
                            "description": "`bundle` makes one file a bundle (several files, or "
                            "an archive, are one anyway).",
                        },
                        "filename": METADATA_SCHEMAS["filename"],
                        "job": METADATA_SCHEMAS["job"],
                        "run_url": METADATA_SCHEMAS["run_url"],
                        "commit": METADATA_SCHEMAS["commit"],
                        # Repeated; each may hold several, comma-separated, as the header does.
                        "labels": {"type": "array", "items": METADATA_SCHEMAS["labels"]},
                    },
                    "required": ["file"],
                },
                # What a file may hold: a text log, gzip-compressed or not, or a bundle's archive;
                # anything else (an image, a binary) is 400 `log-rejected`.
                encoding={"file": {"contentType": ", ".join(FILE_CONTENT_TYPES)}},
            ),
            "application/json": DiagnosisSubmissionSerializer,
        },
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Makes a retry return the first diagnosis (24 hours).",
            ),
            *(
                OpenApiParameter(
                    header, METADATA_SCHEMAS[name], OpenApiParameter.HEADER, description=text
                )
                for name, (header, text) in METADATA_HEADERS.items()
            ),
            *QUOTA_HEADERS,
            OpenApiParameter(
                "Location",
                str,
                OpenApiParameter.HEADER,
                response=[200, 202],
                description="The diagnosis' URL (with `?key=` for a visitor's).",
            ),
        ],
        responses={
            202: DiagnosisSerializer,
            200: OpenApiResponse(
                DiagnosisSerializer, description="A retry: the key's first diagnosis."
            ),
            400: _problem(
                "An empty log, not a text log, invalid gzip or metadata, an unreadable bundle."
            ),
            401: _problem("A wrong or revoked API token."),
            403: _problem("The token lacks the `diagnoses:write` scope."),
            409: _problem("A visitor's repeated Idempotency-Key: its link cannot be shown again."),
            413: _problem("The log, or a bundle, is larger than its limits."),
            415: _problem("A body in none of the accepted forms."),
            422: _problem("The Idempotency-Key already made a diagnosis of another log."),
            429: _problem(
                "Today's quota is used; see Retry-After and the body's `reset` and `upgrade`."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        slot = self.upload_slot or upload_slot(request)  # taken with the throttles
        try:
            return self._submitted(request, slot)
        finally:
            slot.give_back()

    def _submitted(self, request: Request, slot: Slot) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_WRITE)
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > settings.ROOTCAUSE_MAX_LOG_BYTES + 64 * 1024:
            raise PayloadTooLarge(
                f"The log is larger than the limit of {settings.ROOTCAUSE_MAX_LOG_BYTES} bytes."
            )
        # The body is read from here on, as slowly as the client sends it (within the upload
        # deadline): a slot per token and per address, held until the answer.
        with slot.held():
            upload = upload_of(request)
            slot.give_back_with_next()  # with the enqueue, once the log is staged
            cli = request.headers.get("X-Rootcause-Client") == "cli"
            source = Diagnosis.Source.CLI if cli else Diagnosis.Source.API
            key = request.headers.get("Idempotency-Key", "")
            if upload.files is not None:
                submission = services.submit_bundle(
                    actor=actor,
                    files=upload.files,
                    source=source,
                    filename=upload.filename,
                    metadata=upload.metadata,
                    idempotency_key=key,
                    facts=token_facts.read_facts(request),
                )
            else:
                submission = services.submit_diagnosis(
                    actor=actor,
                    chunks=gunzip_if_needed(upload.chunks),
                    source=source,
                    filename=upload.filename,
                    metadata=upload.metadata,
                    idempotency_key=key,
                    facts=token_facts.read_facts(request),
                )
        self.quota_actor = submission.actor
        self.quota_entitlements = submission.entitlements
        self.quota_known = submission.quota
        diagnosis = submission.diagnosis
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # The embedded mode ran the pipeline as the row committed: the answer shows the
            # result. Otherwise the row is as just written (or, for a repeated key, just read).
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


# Long polls this process holds at once (WAITS_PER_PROCESS): each holds a thread while it waits.
WAITING = ProcessSlots()


def _long_poll(request: Request, diagnosis: Diagnosis, seconds: int) -> Diagnosis:
    """The diagnosis after waiting up to `seconds` for it to finish: 429 past the caller's bound
    of concurrent long polls; at once, without waiting, when this process already holds as many
    as it may (the answer says `status`, and clients poll again after a pause)."""
    with (
        client_slots(
            concurrency_bounds(request, "waits"),
            hold_seconds=selectors.MAX_WAIT_SECONDS + 30,
            what="long polls",
        ),
        WAITING.take(settings.WAITS_PER_PROCESS) as taken,
    ):
        return selectors.wait_until_finished(diagnosis, seconds=seconds if taken else 0)


class DiagnosisDetailApi(QuotaHeadersApiView):
    # A visitor reads their diagnosis with its key; the methods check everyone else.
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="diagnoses_retrieve",
        parameters=[KEY, WaitSerializer, *QUOTA_HEADERS],
        responses={
            200: DiagnosisSerializer,
            400: _problem("`wait` is not a whole number of seconds."),
            401: _problem("A wrong or revoked API token."),
            403: _problem("The token lacks the `diagnoses:read` scope."),
            404: _problem("No such diagnosis, another organisation's, or a wrong or expired key."),
            429: _problem(
                "Too many long polls at once from this token or address; see Retry-After."
            ),
        },
        description=(
            "One diagnosis of the organisation, or a visitor's with its `key`. Needs the "
            "`diagnoses:read` scope. 404 for an id of another organisation, a wrong key or an "
            "expired link. With `?wait=N` the answer waits up to N seconds (at most "
            f"{selectors.MAX_WAIT_SECONDS}) for the diagnosis to be `done` or `failed`, and "
            "comes as soon as it is; check `status`, since the wait may end first (a busy server "
            "answers at once). A token, and an address, may hold only a few waiting requests at "
            "once (`CONCURRENT_WAITS_PER_TOKEN`): 429 with Retry-After past it." + QUOTA_NOTE
        ),
    )
    def get(self, request: Request, diagnosis_id: str) -> Response:
        actor = actor_of(request)
        require_scope(actor, SCOPE_DIAGNOSES_READ)
        wait = WaitSerializer(data=request.query_params)
        wait.is_valid(raise_exception=True)
        diagnosis = selectors.get_diagnosis_for(
            actor, diagnosis_id, key=request.query_params.get("key", "")
        )
        seconds = wait.validated_data["wait"]
        if seconds and selectors.is_waiting(diagnosis):
            diagnosis = _long_poll(request, diagnosis, seconds)
        return Response(DiagnosisSerializer(diagnosis).data)

    @extend_schema(
        operation_id="diagnoses_destroy",
        parameters=QUOTA_HEADERS,
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
