"""The staging store: where the raw log waits for masking, and the masked text for matching.

Redis in real mode; a process-local dictionary in the embedded mode, where tasks run in the web
process. Values are written and read in chunks so that a 100 MB log is never held twice in memory.
Keys start with REDIS_KEY_PREFIX, like every other key rootcause writes to Redis.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Protocol, cast

import redis
from django.conf import settings

READ_CHUNK = 1 << 20

RAW = "raw"
MASKED = "masked"


def staging_key(kind: str, diagnosis_id: object) -> str:
    return f"{settings.REDIS_KEY_PREFIX}{kind}:{diagnosis_id}"


class StagingStore(Protocol):
    def write(self, key: str, chunks: Iterable[bytes], *, ttl_seconds: int) -> int: ...
    def read(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, *keys: str) -> None: ...


class RedisStagingStore:
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    def write(self, key: str, chunks: Iterable[bytes], *, ttl_seconds: int) -> int:
        """Replaces `key` with the concatenated chunks; returns the number of bytes written."""
        self.client.delete(key)
        total = 0
        for chunk in chunks:
            if not chunk:
                continue
            # APPEND then EXPIRE in one round trip; the TTL is the backstop if nobody deletes it.
            pipe = self.client.pipeline(transaction=False)
            pipe.append(key, chunk)
            pipe.expire(key, ttl_seconds)
            pipe.execute()
            total += len(chunk)
        if total == 0:
            # An empty log still exists as a value, so "missing" keeps meaning "expired or lost".
            self.client.set(key, b"", ex=ttl_seconds)
        return total

    def read(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        if not self.client.exists(key):
            raise KeyError(key)
        offset = 0
        while True:
            chunk = cast(bytes, self.client.getrange(key, offset, offset + chunk_size - 1))
            if not chunk:
                return
            yield chunk
            offset += len(chunk)

    def exists(self, key: str) -> bool:
        return bool(self.client.exists(key))

    def delete(self, *keys: str) -> None:
        if keys:
            self.client.delete(*keys)


class MemoryStagingStore:
    """Process-local; no TTL is enforced: the value lives only as long as the process."""

    def __init__(self) -> None:
        self._values: dict[str, bytearray] = {}
        self._lock = threading.Lock()

    def write(self, key: str, chunks: Iterable[bytes], *, ttl_seconds: int) -> int:
        value = bytearray()
        for chunk in chunks:
            value += chunk
        with self._lock:
            self._values[key] = value
        return len(value)

    def read(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        with self._lock:
            value = self._values[key]
        view = memoryview(value)
        for offset in range(0, len(value), chunk_size):
            yield bytes(view[offset : offset + chunk_size])

    def exists(self, key: str) -> bool:
        return key in self._values

    def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._values.pop(key, None)


_memory_store = MemoryStagingStore()


@cache
def _redis_store(url: str) -> RedisStagingStore:
    return RedisStagingStore(url)


def get_store(redis_url: str | None) -> StagingStore:
    return _redis_store(redis_url) if redis_url else _memory_store
