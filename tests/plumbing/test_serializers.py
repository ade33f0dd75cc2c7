"""Serializers whose fields are bound once per class (plumbing/serializers.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.core.validators import URLValidator
from rest_framework import serializers

from plumbing.serializers import FieldsBoundOnce


class Plain(serializers.Serializer):
    name = serializers.CharField(max_length=5)
    url = serializers.CharField(required=False, validators=[URLValidator(schemes=["https"])])
    tags = serializers.ListField(child=serializers.CharField(max_length=3), required=False)
    size = serializers.IntegerField(min_value=0, required=False)


class Shared(FieldsBoundOnce, Plain):
    pass


class Row:
    def __init__(self, name: str, size: int) -> None:
        self.name, self.url, self.tags, self.size = name, "https://x.example", ["a"], size


INPUTS: list[dict[str, Any]] = [
    {"name": "ok"},
    {"name": " trimmed "},
    {"name": "far too long"},
    {"name": "ok", "url": "ftp://x.example", "tags": ["abcd", "ab"], "size": -1},
    {"name": "ok", "url": "https://x.example", "tags": ["ab"], "size": 3},
    {"url": "https://x.example"},
    {"name": "nul\x00"},
]


def _validated(cls: type[serializers.Serializer], data: dict[str, Any]) -> Any:
    serializer = cls(data=data)
    return (
        (True, dict(serializer.validated_data))
        if serializer.is_valid()
        else (False, serializer.errors)
    )


def test_validating_and_serializing_give_what_drf_gives() -> None:
    for data in INPUTS:
        assert _validated(Shared, data) == _validated(Plain, data), data
    row = Row("n", 3)
    assert Shared(row).data == Plain(row).data


def test_the_fields_are_made_once_and_reach_no_instance() -> None:
    first, second = Shared(context={"secret": "s"}), Shared(data={"name": "x"})
    assert first.fields is second.fields
    assert Plain().fields is not Plain().fields
    # Bound to a serializer of their own: no request's context is reachable through them.
    field = first.fields["name"]
    assert field.parent is not first
    assert field.parent is not second
    assert field.context == {}


def test_threads_sharing_the_fields_each_get_their_own_answer() -> None:
    def one(n: int) -> tuple[Any, Any]:
        data = {"name": f"n{n % 1000}" if n % 3 else "far too long", "size": n}
        return _validated(Shared, data), Shared(Row(f"r{n}", n)).data

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(400)))

    for n, (validated, represented) in enumerate(answers):
        if n % 3:
            assert validated == (True, {"name": f"n{n % 1000}", "size": n})
        else:
            assert validated[0] is False
            assert list(validated[1]) == ["name"]
        assert represented["name"] == f"r{n}"
        assert represented["size"] == n
