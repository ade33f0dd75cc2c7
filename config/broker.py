"""kombu's Redis transport, with one client object per connection pool instead of one per command.

kombu's Redis channel makes a new `redis.Redis` for every command it sends outside its polling
loop (`Channel.conn_or_acquire`): each task published by the web, each acknowledgement in a
worker. The constructor fills a table of about 150 response callbacks, which cost more CPU than
the LPUSH it sends. The same fix as config/cache.py: one client per pool, kept until the channel
replaces its pool (after a fork or a lost connection), when the next command makes a new one. A
`redis.Redis` is safe to share between threads: each command takes a connection from the pool.

It also mends the crash that stopped workers after a Redis restart: `Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")` (celery/kombu#582). On a broker
loss Celery closes the connection, and closing the channel puts its unacknowledged messages back,
which needs a Redis client; the channel has dropped its pool by then and builds a new one from
connection details that are already gone. kombu reads them unguarded and raises AttributeError,
which no one catches, and the worker exits. Here the channel raises a Redis ConnectionError
instead: a connection error, which kombu ignores while closing and Celery answers by connecting
again (the messages stay in Redis's unacknowledged set, restored after the visibility timeout).
tests/e2e/test_faults.py restarts Redis under load, which reproduced the crash on a busy machine
(docs/operations.md); tests/config/test_broker.py puts a channel in that state.

Celery uses it through CELERY_BROKER_TRANSPORT (config/settings.py) in real mode; the embedded
mode's in-memory broker is untouched.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _shared_client: Any = None

    def _connparams(self, asynchronous: bool = False) -> Any:
        transport = self.connection
        if transport is None or transport.client is None:
            raise redis.ConnectionError("the broker connection was closed")
        kombu: Any = super()  # a private method, not in kombu's type stubs
        return kombu._connparams(asynchronous=asynchronous)

    def _create_client(self, asynchronous: bool = False) -> Any:
        kombu: Any = super()  # a private method, not in kombu's type stubs
        if asynchronous:  # the polling loop's own client, which kombu already keeps
            return kombu._create_client(asynchronous=True)
        client = self._shared_client
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = kombu._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
