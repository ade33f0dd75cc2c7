"""kombu's Redis transport with one client per connection pool, and the web's task publisher
(plumbing/broker.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, cast

import celery
import pytest
import redis
from celery import Celery
from django.conf import settings
from django.test import override_settings

from config.celery import app, publisher
from plumbing import broker
from plumbing.problems import outage_errors
from tests.e2e.stack import OwnRedis
from tests.with_services import free_port


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


# --- The web's publisher: Celery's message in one LPUSH --------------------------------------


def _queued_for(diagnosis_id: str) -> list[dict[str, Any]]:
    """The messages in the default queue whose argument is `diagnosis_id`, taken out of it."""
    client = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    key = f"{settings.REDIS_KEY_PREFIX}{app.conf.task_default_queue}"
    found = [
        str(raw) for raw in cast(list[str], client.lrange(key, 0, -1)) if diagnosis_id in str(raw)
    ]
    for raw in found:
        client.lrem(key, 1, raw)
    return [json.loads(raw) for raw in found]


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    headers = {k: v for k, v in message["headers"].items() if k not in {"id", "root_id"}}
    properties = {
        k: v
        for k, v in message["properties"].items()
        if k not in {"correlation_id", "delivery_tag"}
    }
    return {**message, "headers": headers, "properties": properties}


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_the_publisher_sends_the_message_celery_would() -> None:
    diagnosis_id = str(uuid.uuid4())
    celery.signature("workers.tasks.mask", args=(diagnosis_id,), immutable=True).apply_async()
    task_id = publisher.publish("workers.tasks.mask", (diagnosis_id,))

    by_celery, ours = sorted(_queued_for(diagnosis_id), key=lambda m: m["headers"]["id"] == task_id)
    assert ours["headers"]["id"] == ours["headers"]["root_id"] == task_id
    assert ours["properties"]["correlation_id"] == task_id
    # The task's own options travel with it, as Celery sends them (a worker enforces the limits).
    assert ours["headers"]["timelimit"] == [270, 240]
    assert ours["headers"]["ignore_result"] is True
    assert _without_ids(ours) == _without_ids(by_celery)
    assert by_celery["properties"]["delivery_info"] == {"exchange": "", "routing_key": "celery"}


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_the_message_for_a_caller_to_push_is_the_one_publish_sends() -> None:
    # The first message of a task in a process is made the whole way, the next ones from it.
    own = broker.TaskPublisher(app)  # a publisher of its own: no message made yet
    for _ in range(3):
        diagnosis_id = str(uuid.uuid4())
        own.publish("workers.tasks.mask", (diagnosis_id,))
        message = own.message_for("workers.tasks.mask", (diagnosis_id,))

        assert message.key == f"{settings.REDIS_KEY_PREFIX}{app.conf.task_default_queue}"
        redis.Redis.from_url(settings.REDIS_URL).lpush(message.key, message.payload)
        published, pushed = _queued_for(diagnosis_id)
        assert _without_ids(pushed) == _without_ids(published)
        task_id = pushed["headers"]["id"]
        assert task_id != published["headers"]["id"]  # a task id of its own
        assert pushed["headers"]["root_id"] == pushed["properties"]["correlation_id"] == task_id
        assert pushed["properties"]["delivery_tag"] != published["properties"]["delivery_tag"]


@pytest.mark.parametrize("args", [("it's",), ("a\\b",), ("x" * 2000,), (7,), ("",)])
def test_a_message_of_other_arguments_is_made_the_whole_way(args: tuple[object, ...]) -> None:
    own = broker.TaskPublisher(app)  # a publisher of its own: no message made yet
    own.message_for("rootcause.ping", ("warm",))  # the task's template is made
    made = json.loads(own.message_for("rootcause.ping", args).payload)
    whole = json.loads(own._queued("rootcause.ping", args).payload)
    assert made["headers"]["argsrepr"] == whole["headers"]["argsrepr"]
    assert _without_ids(made) == _without_ids(whole)


def test_a_message_that_is_not_one_lpush_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    own = broker.TaskPublisher(app)  # a publisher of its own: no message made yet
    channel: Any = own._channel_for_publishing()
    monkeypatch.setattr(channel, "_expires", {app.conf.task_default_queue: 60_000}, raising=False)
    with pytest.raises(ValueError, match="one LPUSH"):
        own.message_for("workers.tasks.mask", (str(uuid.uuid4()),))


def test_the_publisher_routes_like_celery_and_refuses_what_it_cannot() -> None:
    other = Celery("other", set_as_current=False)
    other.conf.update(task_default_queue="elsewhere")
    assert broker._Route.of(other, "unregistered.task").queue == "elsewhere"

    other.conf.update(task_routes={"fanned.out": {"exchange": "fan", "exchange_type": "fanout"}})
    with pytest.raises(ValueError, match="direct exchange"):
        broker._Route.of(other, "fanned.out")


def _publisher_on(url: str) -> broker.TaskPublisher:
    """A publisher of its own Celery app, on the Redis at `url`, with this project's transport."""
    own = Celery("own", set_as_current=False, broker=url)
    own.conf.update(
        broker_transport="plumbing.broker:Transport",
        broker_transport_options={"global_keyprefix": "test:"},
    )
    return broker.TaskPublisher(own)


def test_a_publisher_with_redis_away_fails_as_a_connection_error_and_tries_again() -> None:
    # Nothing listens on a port just freed.
    away_publisher = _publisher_on(f"redis://127.0.0.1:{free_port()}/0")

    for _ in range(2):  # nothing broken is kept: the second call connects anew, and fails again
        with pytest.raises(outage_errors()):
            away_publisher.publish("rootcause.ping", ())
    assert away_publisher._channel is None


def test_the_publisher_goes_on_after_a_redis_restart(tmp_path: Path) -> None:
    redis_server = OwnRedis(tmp_path)
    redis_server.start()
    restarted_publisher = _publisher_on(redis_server.url)
    try:
        restarted_publisher.publish("rootcause.ping", ())
        redis_server.kill()
        with pytest.raises(outage_errors()):  # away: refused at once, for the sweeper to retry
            restarted_publisher.publish("rootcause.ping", ())
        redis_server.start()  # the same port, empty

        restarted_publisher.publish("rootcause.ping", ())  # the kept channel reconnects

        assert redis_server.client().llen("test:celery") == 1
    finally:
        redis_server.kill()
