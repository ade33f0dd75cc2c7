"""The public encyclopedia API. Anyone may call it; callers whose tier includes fixes (signed-in
people and API tokens) also get them."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from encyclopedia import memory, selectors
from encyclopedia.models import Entry
from encyclopedia.serializers import (
    EntryFilterSerializer,
    EntrySerializer,
    MemoryEstimateInputSerializer,
    MemoryEstimateSerializer,
    ProblemSerializer,
    SearchInputSerializer,
    SearchOutputSerializer,
)
from plumbing.pagination import LimitOffsetPagination
from plumbing.problems import PROBLEM_CONTENT_TYPE, ApplicationError
from rootcause.result import as_json

PROBLEM = OpenApiResponse(ProblemSerializer, description="Problem details (RFC 9457).")


def _problems(*codes: int) -> dict[int | tuple[int, str], OpenApiResponse]:
    return {(code, PROBLEM_CONTENT_TYPE): PROBLEM for code in codes}


def _entry_payload(entry: Entry, *, can_see_fix: bool) -> dict[str, object]:
    payload = selectors.visible_fields(entry.data, can_see_fix=can_see_fix)
    payload["url"] = reverse("encyclopedia:entry", args=[entry.slug])
    payload["locked"] = selectors.locked_fields(entry.data, can_see_fix=can_see_fix)
    return payload


class EntryListApi(GenericAPIView):
    permission_classes = [AllowAny]
    pagination_class = LimitOffsetPagination
    serializer_class = EntrySerializer

    @extend_schema(
        operation_id="encyclopedia_list",
        parameters=[EntryFilterSerializer],
        # Keyed like the problems: drf-spectacular picks the lowest key as the main response
        # when it decides whether to document pagination.
        responses={(200, "application/json"): EntrySerializer(many=True), **_problems(400)},
        description="Catalogue entries by category and slug. Anonymous callers get the free "
        "fields; callers whose tier includes fixes (signed in, or with an API token) also get "
        "fix, prevention, verification, code examples and fingerprints.",
    )
    def get(self, request: Request) -> Response:
        filters = EntryFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        chosen = {name: value for name, value in filters.validated_data.items() if value != ""}
        entries = selectors.list_entries(**chosen)
        page = self.paginate_queryset(entries)
        assert page is not None  # pagination_class is set
        allowed = selectors.can_see_fix(actor_of(request))
        data = [_entry_payload(entry, can_see_fix=allowed) for entry in page]
        return self.get_paginated_response(EntrySerializer(data, many=True).data)


class EntryDetailApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="encyclopedia_retrieve",
        responses={200: EntrySerializer, **_problems(404)},
        description="One entry by slug, gated like the list.",
    )
    def get(self, request: Request, slug: str) -> Response:
        entry = selectors.get_entry(slug)
        payload = _entry_payload(entry, can_see_fix=selectors.can_see_fix(actor_of(request)))
        return Response(EntrySerializer(payload).data)


class EntrySearchApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="encyclopedia_search",
        request=SearchInputSerializer,
        responses={200: SearchOutputSerializer, **_problems(400, 413)},
        description="Entries whose fingerprints match pasted error text, with the lines that "
        "matched. Uses the diagnosis pipeline's matcher; the text is not stored.",
        examples=[
            OpenApiExample(
                "CUDA OOM in the optimizer",
                request_only=True,
                value={
                    "text": 'File "/x/torch/optim/adamw.py", line 606, in _multi_tensor_adamw\n'
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB."
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        params = SearchInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        results = selectors.search_entries(
            params.validated_data["text"], limit=params.validated_data["limit"]
        )
        payload = {
            "catalogue_version": selectors.current_version(),
            "results": [
                {**as_json(r), "url": reverse("encyclopedia:entry", args=[r.slug])} for r in results
            ],
        }
        return Response(SearchOutputSerializer(payload).data)


class MemoryEstimateApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="tools_memory_estimate",
        parameters=[MemoryEstimateInputSerializer],
        responses={200: MemoryEstimateSerializer, **_problems(400)},
        description="Bytes per GPU for weights, gradients, optimizer states and fp32 master "
        "weights of one data-parallel rank, with the formula. Activations are not counted.",
    )
    def get(self, request: Request) -> Response:
        params = MemoryEstimateInputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        args = dict(params.validated_data)
        gib = args.pop("gpu_memory_gib", None)
        try:
            result = memory.estimate(
                **args, gpu_memory_bytes=None if gib is None else round(gib * 2**30)
            )
        except memory.EstimateError as exc:
            raise ApplicationError(str(exc)) from None
        return Response(MemoryEstimateSerializer(result).data)
