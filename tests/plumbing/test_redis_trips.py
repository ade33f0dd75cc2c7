"""The round-trip counter the overhead tests pin their figures with (tests/redis_trips.py)."""

from __future__ import annotations

import uuid

import pytest

from tests import redis_namespace
from tests.redis_trips import redis_round_trips


def test_a_scripts_first_use_on_a_server_counts_as_its_one_round_trip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A script no server has seen: its first call is refused (NOSCRIPT), loaded and sent again,
    # which happens once per server; the counts pinned elsewhere are what every request sends.
    script = redis_namespace.client().register_script(f"return '{uuid.uuid4().hex}'")
    trips = redis_round_trips(monkeypatch)

    script()
    script()

    assert trips == [["EVALSHA"], ["EVALSHA"]]
