"""Pagination for every list endpoint: parameters validated (400 problem+json) and capped.

DRF's own classes turn `limit=abc` into the default and pass `limit=100000000000000000000` or a
huge `offset` on to the database, which fails with a 500 (an integer out of range in SQL). Here a
value that is not a whole number in range is the caller's error, named in the problem; `limit`
and `page_size` above the maximum are capped to it, as DRF documents `max_limit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

# DRF's OpenAPI parameter objects: nested dicts edited in place by key
Parameters: TypeAlias = list[dict[str, Any]]

M = TypeVar("M", bound=Model)
R = TypeVar("R")

MAX_PAGE_SIZE = 100
# OFFSET past this is no page anyone reads, and 32-bit signed is what every backend takes.
MAX_OFFSET = 2**31 - 1
# A whole number is at most this many digits before int() is asked to parse it.
_MAX_DIGITS = 12


def query_int(request: Request, name: str, *, default: int, minimum: int, maximum: int) -> int:
    """The integer query parameter `name`, `default` when absent, a 400 when not a whole
    number from `minimum` to `maximum`."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= _MAX_DIGITS):
        raise ValidationError({name: [f"A whole number from {minimum} to {maximum}."]})
    value = int(raw)
    if value < minimum or value > maximum:
        raise ValidationError({name: [f"A whole number from {minimum} to {maximum}."]})
    return value


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request: Request) -> int:
        # Above max_limit is capped, not refused (DRF's documented behaviour); nonsense is a 400.
        limit = query_int(
            request,
            self.limit_query_param,
            default=self.default_limit,
            minimum=1,
            maximum=MAX_OFFSET,
        )
        return min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return query_int(request, self.offset_query_param, default=0, minimum=0, maximum=MAX_OFFSET)

    # DRF's parameters, given the ranges the methods above accept
    def get_schema_operation_parameters(self, view: APIView) -> Parameters:
        parameters: Parameters = super().get_schema_operation_parameters(view)
        return _ranged(parameters, {self.limit_query_param: 1, self.offset_query_param: 0})


class CursorPagination(pagination.CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        size = query_int(
            request, "page_size", default=self.page_size, minimum=1, maximum=MAX_OFFSET
        )
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view: APIView) -> Parameters:
        parameters: Parameters = super().get_schema_operation_parameters(view)
        return _ranged(parameters, {"page_size": 1})

    def paginate_queryset(
        self, queryset: QuerySet[M, R], request: Request, view: APIView | None = None
    ) -> list[R] | None:
        # A cursor we could decode but whose position is no value of the ordering field
        # (base64 of "p=2021") fails in the ORM's filter: still the caller's error.
        try:
            return super().paginate_queryset(queryset, request, view)
        except (DjangoValidationError, ValueError, OverflowError):
            problem = {self.cursor_query_param: ["Not a cursor from this API."]}
            raise ValidationError(problem) from None

    def decode_cursor(self, request: Request) -> Cursor | None:
        # An empty cursor is the first page, as an absent one (and as an empty number is the
        # default); a cursor that is not one we issued is a bad request, not a missing page
        # (DRF: 404).
        if not request.query_params.get(self.cursor_query_param):
            return None
        try:
            return super().decode_cursor(request)
        except NotFound:
            raise ValidationError(
                {self.cursor_query_param: ["Not a cursor from this API."]}
            ) from None


class Sliceable(Protocol):
    """Rows that are not a queryset but page like one: counted, then sliced for one page."""

    def count(self) -> int: ...

    def __getitem__(self, page: slice) -> Sequence[object]: ...


def paged_response(
    view: APIView,
    request: Request,
    rows: QuerySet[Any] | Sliceable,  # rows of any model
    serializer: type[BaseSerializer[Any]],  # of any rows: Serializer is invariant
    **context: object,
) -> Response:
    """One page of `rows` by `limit` and `offset`, as every plain list of the API answers it:
    `{"count", "next", "previous", "results"}`; `context` goes to the serializer."""
    paginator = LimitOffsetPagination()
    # DRF counts (`.count()`) and slices what it is given; a Sliceable does both.
    page = paginator.paginate_queryset(rows, request, view=view)  # type: ignore[arg-type]
    return paginator.get_paginated_response(serializer(page, many=True, context=context).data)


def _ranged(parameters: Parameters, minimum: dict[str, int]) -> Parameters:
    """DRF's parameters with the range query_int holds them to, so that the schema says what a
    400 is (an integer below the minimum or past 2^31 - 1; above the maximum page, capped)."""
    for parameter in parameters:
        if parameter["name"] in minimum:
            parameter["schema"] = {
                **parameter["schema"],
                "minimum": minimum[parameter["name"]],
                "maximum": MAX_OFFSET,
            }
    return parameters
