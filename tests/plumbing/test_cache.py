"""Django's Redis cache with a shared client and a shorter `set_many` (plumbing/cache.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.core.cache import cache

from tests.redis_trips import redis_round_trips


@pytest.fixture
def keys() -> Any:
    names = [f"test-cache-{uuid.uuid4().hex}-{n}" for n in range(2)]
    yield names
    cache.delete_many(names)


def _ttl(key: str) -> int:
    client: Any = cache._cache.get_client()  # type: ignore[attr-defined]
    return int(client.ttl(cache.make_and_validate_key(key)))


def test_set_many_writes_each_key_with_its_expiry_in_one_round_trip(
    keys: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = redis_round_trips(monkeypatch)
    cache.set_many({keys[0]: [1.5, 2.5], keys[1]: {"n": 1}}, 30)

    assert trips == [["SET", "SET"]]
    assert cache.get_many(keys) == {keys[0]: [1.5, 2.5], keys[1]: {"n": 1}}
    assert all(25 <= _ttl(key) <= 30 for key in keys)


def test_set_many_keeps_for_ever_with_none_and_deletes_with_zero(keys: list[str]) -> None:
    cache.set_many({keys[0]: 1, keys[1]: 2}, None)
    assert [_ttl(key) for key in keys] == [-1, -1]  # no expiry

    cache.set_many({keys[0]: 3}, 0)
    assert cache.get_many(keys) == {keys[1]: 2}


def test_every_call_shares_one_client() -> None:
    backend: Any = cache._cache  # type: ignore[attr-defined]
    assert backend.get_client(write=True) is backend.get_client(write=True)
