"""kombu's Redis transport with one client per connection pool (config/broker.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis

from config import broker
from config.celery import app


def test_celery_publishes_through_the_shared_client_transport():
    with app.connection_for_write() as connection:
        assert isinstance(connection.default_channel, broker.Channel)


def test_a_channel_keeps_one_client_until_its_pool_is_replaced():
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel  # kombu's private methods: not in its stubs
        queue = connection.SimpleQueue(f"test-broker-{uuid.uuid4().hex}")
        queue.put({"n": 1})
        client = channel._create_client()
        queue.put({"n": 2})

        assert channel._create_client() is client
        # The polling loop's client is kombu's own, apart from the one for commands.
        assert channel._create_client(asynchronous=True) is not client

        # After a fork or a lost connection kombu drops its pools: a new client on the new pool.
        channel._disconnect_pools()
        queue.put({"n": 3})
        renewed = channel._create_client()
        assert renewed is not client
        assert renewed.connection_pool is channel.pool

        received = []
        for _ in range(3):
            message = queue.get(timeout=5)
            received.append(message.payload["n"])
            message.ack()
        queue.close()
    assert received == [1, 2, 3]


def test_a_channel_closed_after_its_connection_is_gone_fails_as_a_connection_error():
    """A Redis restart: Celery closes the connection, and closing the channel puts back the
    messages it was given but not acknowledged, which needs a client, from a pool the channel has
    dropped, built from connection details that are gone. kombu raised AttributeError there and
    the worker exited (celery/kombu#582); a connection error is what kombu ignores while closing."""
    with app.connection_for_write() as connection:
        queue = connection.SimpleQueue(f"test-broker-{uuid.uuid4().hex}")
        queue.put({"n": 1})
        queue.get(timeout=5)  # given to this consumer, not acknowledged
        channel: Any = connection.default_channel
        assert channel.qos._delivered
        transport = channel.connection
        details = transport.client
        channel._disconnect_pools()
        transport.client = None  # as the lost connection leaves it
        try:
            with pytest.raises(redis.ConnectionError) as raised:
                channel.close()
        finally:
            transport.client = details
        assert isinstance(raised.value, connection.connection_errors)
