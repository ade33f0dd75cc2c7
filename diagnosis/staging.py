"""The staging store: where the raw log waits for masking, and the masked text for matching.

Redis in real mode; a process-local dictionary in the embedded mode, where tasks run in the web
process. Values are written and read in chunks so that a 100 MB log is never held twice in memory.
Keys start with REDIS_KEY_PREFIX, like every other key rootcause writes to Redis.

A raw log is staged before its diagnosis row commits, so that the row never names a log that was
not kept. Until the row commits it lives under a short TTL, refreshed by every chunk
(STAGING_PENDING_TTL_SECONDS): a web process killed mid-upload leaves a key that expires by itself
within that time, and the staging sweeper (`diagnosis.services.sweep_staging`) deletes earlier any
key that no diagnosis row names and that nobody has written for STAGING_ORPHAN_IDLE_SECONDS. Once
the row has committed the key gets the backstop TTL (ROOTCAUSE_RAW_TTL_SECONDS).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Protocol, cast

import redis
from django.conf import settings

from plumbing.concurrency import rider

READ_CHUNK = 1 << 20

RAW = "raw"
MASKED = "masked"

# The failure reason of a diagnosis whose staged value Redis lost (a restart without its data):
# the stage that finds it gone and the staging sweeper both give it.
LOST_IN_OUTAGE = (
    "the log was lost in an outage of our staging store before it could be diagnosed; "
    "please submit it again (this one was not counted)"
)


def staging_key(kind: str, diagnosis_id: object) -> str:
    return f"{settings.REDIS_KEY_PREFIX}{kind}:{diagnosis_id}"


def staged_id(kind: str, key: str) -> str:
    """The diagnosis id of a staging key of `kind` (the inverse of staging_key)."""
    return key[len(staging_key(kind, "")) :]


class StagingStore(Protocol):
    def write(self, key: str, chunks: Iterable[bytes], *, ttl_seconds: int) -> int: ...
    def read(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, *keys: str) -> None: ...
    def expire(self, key: str, ttl_seconds: int) -> bool: ...
    def existing(self, keys: list[str]) -> list[bool]: ...
    def keys_of(self, kind: str) -> Iterator[str]: ...
    def idle_seconds(self, key: str) -> int | None: ...


# The staged log's new TTL and, only if the log is still there, its task message: one round
# trip, and no message for a log that is gone. KEYS[3…], if any: the sets of an upload's slot
# to give back (ARGV[3], its member), whatever became of the log.
_EXPIRE_AND_PUSH = """
for i = 3, #KEYS do
    redis.call('ZREM', KEYS[i], ARGV[3])
end
if redis.call('EXPIRE', KEYS[1], ARGV[1]) == 0 then
    return 0
end
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
"""


class RedisStagingStore:
    def __init__(self, url: str) -> None:
        # Bounded waits: while Redis is away a request fails in seconds (503, Retry-After) instead
        # of holding its thread; a connection broken by a restart is replaced on the next call.
        self.client = redis.Redis.from_url(
            url, socket_connect_timeout=3, socket_timeout=30, health_check_interval=30
        )
        # Sent by its digest, and loaded again by redis-py if Redis restarted without it.
        self._expire_and_push = self.client.register_script(_EXPIRE_AND_PUSH)

    def write(self, key: str, chunks: Iterable[bytes], *, ttl_seconds: int) -> int:
        """Replaces `key` with the concatenated chunks; returns the number of bytes written.

        The first chunk replaces the value and sets its TTL in one SET: a log that comes in one
        chunk (most do) is one round trip. Each later chunk is an APPEND that refreshes the TTL,
        also one round trip; the TTL is the backstop if nobody deletes the key.
        """
        total = 0
        for chunk in chunks:
            if not chunk:
                continue
            if total == 0:
                self.client.set(key, chunk, ex=ttl_seconds)
            else:
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
        # Whether the key is there and its first chunk, in one round trip (most logs are one
        # chunk): GETRANGE alone says "" for a missing key as for an empty value.
        pipe = self.client.pipeline(transaction=False)
        pipe.exists(key)
        pipe.getrange(key, 0, chunk_size - 1)
        found, first = pipe.execute()
        if not found:
            raise KeyError(key)
        offset = 0
        while True:
            chunk = (
                cast(bytes, first)
                if offset == 0
                else cast(bytes, self.client.getrange(key, offset, offset + chunk_size - 1))
            )
            if not chunk:
                return
            yield chunk
            if len(chunk) < chunk_size:
                return  # the end: no round trip to learn that nothing follows
            offset += len(chunk)

    def exists(self, key: str) -> bool:
        return bool(self.client.exists(key))

    def delete(self, *keys: str) -> None:
        if keys:
            self.client.delete(*keys)

    def expire(self, key: str, ttl_seconds: int) -> bool:
        """Sets the key's TTL; False if there is no such key (it expired or was lost)."""
        return bool(self.client.expire(key, ttl_seconds))

    def expire_and_push(self, key: str, ttl_seconds: int, queue_key: str, message: str) -> bool:
        """`expire`, then, if the key was there, LPUSH `message` onto the list `queue_key`
        (a Celery queue: plumbing/broker.py's `TaskPublisher.message_for`), atomically and in one
        round trip. False, and nothing pushed, if there is no such key. The request's upload
        slot waiting for a ride goes back in the same round trip."""
        # An upload's slot, done with once the log is staged, is given back by the same script
        # (plumbing/concurrency.py): the cache's Redis is this one (REDIS_URL).
        riding = rider()
        keys: list[str] = [key, queue_key]
        args: list[str | int] = [ttl_seconds, message]
        if riding is not None:
            keys, args = keys + riding.keys, [*args, riding.member]
        kept = bool(self._expire_and_push(keys=keys, args=args))
        if riding is not None:
            riding.sent()
        return kept

    def existing(self, keys: list[str]) -> list[bool]:
        """Which of the keys exist, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.exists(key)
        return [bool(found) for found in pipe.execute()]

    def keys_of(self, kind: str) -> Iterator[str]:
        """Every staging key of `kind` (SCAN: no long block of the server)."""
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", staging_key(kind, "")) + "*"
        for key in self.client.scan_iter(match=pattern, count=1000):
            yield key.decode() if isinstance(key, bytes) else str(key)

    def idle_seconds(self, key: str) -> int | None:
        """Seconds since the key was last written or read; None if it does not exist."""
        idle = self.client.object("idletime", key)
        return None if idle is None else int(cast(int, idle))


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

    def expire(self, key: str, ttl_seconds: int) -> bool:
        return key in self._values

    def existing(self, keys: list[str]) -> list[bool]:
        return [key in self._values for key in keys]

    def keys_of(self, kind: str) -> Iterator[str]:
        start = staging_key(kind, "")
        with self._lock:
            found = [key for key in self._values if key.startswith(start)]
        yield from found

    def idle_seconds(self, key: str) -> int | None:
        # The embedded mode stages and masks within one request: nothing is ever idle.
        return 0 if key in self._values else None


_memory_store = MemoryStagingStore()


@cache
def _redis_store(url: str) -> RedisStagingStore:
    return RedisStagingStore(url)


def get_store(redis_url: str | None) -> StagingStore:
    return _redis_store(redis_url) if redis_url else _memory_store
