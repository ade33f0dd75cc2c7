"""The Redis keys of this test run: those under its own REDIS_KEY_PREFIX (see settings_test.py).

Tests share a Redis database with other runs on the machine, so they never flush it: they look at
and delete only the keys under their prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import redis
from django.conf import settings


def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)


def run_keys(connection: redis.Redis | None = None) -> Iterator[bytes]:
    prefix = settings.REDIS_KEY_PREFIX
    if not prefix:
        raise RuntimeError("a test run needs its own REDIS_KEY_PREFIX; see config/settings_test.py")
    # SCAN MATCH takes a glob: escape the prefix so that only keys starting with it match.
    pattern = re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"
    return (connection or client()).scan_iter(match=pattern, count=1000)


def delete_run_keys() -> int:
    """Delete every key of this run; returns how many there were."""
    connection = client()
    deleted, batch = 0, []
    for key in run_keys(connection):
        batch.append(key)
        if len(batch) == 1000:
            deleted += cast(int, connection.delete(*batch))
            batch = []
    if batch:
        deleted += cast(int, connection.delete(*batch))
    return deleted
