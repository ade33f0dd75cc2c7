"""Django's Redis cache, with one client object per connection pool instead of one per call,
and a `set_many` of two commands for two keys rather than five.

Django's RedisCacheClient makes a new `redis.Redis` for every cache operation (its constructor
fills a table of about 150 response callbacks, a tenth of a millisecond), and every API
submission makes three (the throttles' read and write, the failed-token count). A `redis.Redis`
is safe to share between threads: each command takes a connection from the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

from plumbing.unstubbed import unstubbed


class _SharedClientCacheClient(RedisCacheClient):
    # Django's constructor's arguments, passed on unchanged
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, redis.Redis] = {}

    def get_client(self, key: object = None, *, write: bool = False) -> redis.Redis:
        django = unstubbed(self)  # the private helpers below
        index = django._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            # A race makes two clients on the same pool, one of which is kept: harmless.
            client = self._clients[index] = django._client(
                connection_pool=django._get_connection_pool(write)
            )
        return client

    def set_many(
        self, data: Mapping[str | bytes | memoryview, object], timeout: int | timedelta | None
    ) -> None:
        """Every submission writes its two throttle histories with this. Django's sends an MSET,
        an EXPIRE for each key and a MULTI and EXEC around them: five commands and replies for
        two keys. Here each key is one SET with its expiry (atomic on its own, as a throttle's
        history needs), all in one round trip; 0 deletes, None keeps for ever, as Django's."""
        if timeout == 0:
            self.delete_many(list(data))
            return
        django = unstubbed(self)  # its serializer
        pipeline = self.get_client(write=True).pipeline(transaction=False)
        for key, value in data.items():
            pipeline.set(key, django._serializer.dumps(value), ex=timeout)
        pipeline.execute()


class SharedClientRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, object]) -> None:
        super().__init__(server, params)
        self._class = _SharedClientCacheClient

    def redis_client(self) -> redis.Redis:
        """The shared client of the writing pool, for what Django's cache has no method for
        (plumbing/ratelimit.py's script); keys still go through `make_key`."""
        django = unstubbed(self)  # its private attribute
        client: redis.Redis = django._cache.get_client(write=True)
        return client
