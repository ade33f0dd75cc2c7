"""kombu's Redis transport, with one client object per connection pool instead of one per command.

kombu's Redis channel makes a new `redis.Redis` for every command it sends outside its polling
loop (`Channel.conn_or_acquire`): each task published by the web, each acknowledgement in a
worker. The constructor fills a table of about 150 response callbacks, which cost more CPU than
the LPUSH it sends. The same fix as plumbing/cache.py: one client per pool, kept until the channel
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
(docs/operations.md); tests/plumbing/test_broker.py puts a channel in that state.

Celery uses it through CELERY_BROKER_TRANSPORT (config/settings.py) in real mode; the embedded
mode's in-memory broker is untouched. `TaskPublisher`, below, sends the web's task messages.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

import redis
from kombu import Connection, serialization
from kombu.entity import maybe_delivery_mode
from kombu.transport import redis as kombu_redis
from kombu.utils import json as kombu_json
from kombu.utils.uuid import uuid

from plumbing.unstubbed import unstubbed


class Channel(kombu_redis.Channel):
    _shared_client: redis.Redis | None = None

    def _connparams(self, asynchronous: bool = False) -> dict[str, object]:
        transport = self.connection
        if transport is None or transport.client is None:
            raise redis.ConnectionError("the broker connection was closed")
        kombu = unstubbed(super())
        params: dict[str, object] = kombu._connparams(asynchronous=asynchronous)
        return params

    def _create_client(self, asynchronous: bool = False) -> redis.Redis:
        kombu = unstubbed(super())
        if asynchronous:  # the polling loop's own client, which kombu already keeps
            own: redis.Redis = kombu._create_client(asynchronous=True)
            return own
        client = self._shared_client
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = kombu._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel


class TaskPublisher:
    """Sends a Celery task message with one LPUSH, without `send_task`'s machinery around it.

    The web publishes one message per diagnosis, and `send_task` (routing by the settings on
    every call, the producer pool, declaring the queue, the retry wrapper, kombu's serializer
    registry) cost about three times what it sends: 1.0 ms against 0.34 ms for this path on a
    slow VM (docs/benchmarks.md, 2026-12-06). The message is still Celery's and kombu's own:
    Celery's `as_task_v2` builds it with the registered task's options (time limits,
    ignore_result), and kombu's Redis channel (`prepare_message`, `basic_publish`) encodes and
    pushes it as its Producer would, so a worker reads exactly what `send_task` would have sent.
    Only tasks routed to a direct exchange (every task of this project) are supported.

    One channel per process, made on first use (its creation pings Redis, and is tried again on
    the next call if Redis is away); the channel only formats messages and pushes them through
    its shared client, which is safe to use from every thread.
    """

    # Celery's app: its amqp helpers are used with arguments its stubs type more narrowly than
    # Celery accepts (time limits as floats, ignore_result None), so it is used untyped.
    def __init__(self, app: Any) -> None:
        self.app = app
        self._connection: Connection | None = None
        # kombu's Redis channel: its prepare_message, basic_publish's batch hook and key prefix are
        # not in kombu's stubs (StdChannel), so it is used untyped here.
        self._channel: Any = None
        self._lock = threading.Lock()
        self._routes: dict[str, _Route] = {}
        self._templates: dict[str, _MessageTemplate] = {}

    def publish(self, name: str, args: tuple[object, ...]) -> str:
        """Sends task `name` with positional `args`; returns the task id."""
        channel, message, route, task_id = self._prepared(name, args)
        channel.basic_publish(message, exchange="", routing_key=route.queue)
        return task_id

    def message_for(self, name: str, args: tuple[object, ...]) -> QueuedMessage:
        """What `publish` would push for task `name`, for a caller that sends it itself: the
        queue's Redis key (with the global key prefix) and the encoded message. The web sends it
        in the same round trip as the staged log's new TTL (diagnosis/staging.py).

        The message is `publish`'s with its ids and arguments replaced: the first one of each
        task in each process is made by Celery and kombu as `publish` makes it (`_MessageTemplate`),
        and later ones reuse it, since making one cost more than the rest of the enqueue
        (0.5 of the submission's 8.7 million instructions, docs/benchmarks.md 2026-12-07).
        Arguments other than plain strings (ids) go the whole way every time."""
        if all(type(arg) is str and _PLAIN.fullmatch(arg) for arg in args):
            template = self._templates.get(name)
            if template is None or template.pid != os.getpid():
                template = self._templates[name] = self._template(name)
            return template.message(args, reply_to=self.app.thread_oid)
        return self._queued(name, args)

    def _template(self, name: str) -> _MessageTemplate:
        return _MessageTemplate.of(self._queued(name, ("",)))

    def _queued(self, name: str, args: tuple[object, ...]) -> QueuedMessage:
        """The message made by Celery and kombu, as `publish` sends it, through the batch hook
        of kombu 5.7's Redis transport: the channel hands the batch the Redis commands it would
        have sent, which must be a single LPUSH (a queue with a message TTL or an expiry would
        add more: ValueError, none of ours has them)."""
        channel, message, route, _ = self._prepared(name, args)
        commands = _Commands()
        channel.basic_publish(
            message, exchange="", routing_key=route.queue, _publish_batch=commands
        )
        if len(commands.sent) != 1 or commands.sent[0][0] != "lpush":
            raise ValueError(f"{name} is not published with one LPUSH: {commands.sent!r}")
        key, payload = commands.sent[0][1]
        return QueuedMessage(key=f"{channel.global_keyprefix}{key}", payload=payload)

    def _prepared(
        self, name: str, args: tuple[object, ...]
    ) -> tuple[Any, dict[str, object], _Route, str]:  # the channel, as above
        route = self._route(name)
        task_id = uuid()
        headers, properties, body, _ = self.app.amqp.as_task_v2(
            task_id,
            name,
            args=args,
            reply_to=self.app.thread_oid,
            time_limit=route.time_limit,
            soft_time_limit=route.soft_time_limit,
            ignore_result=route.ignore_result,
        )
        content_type, content_encoding, data = serialization.dumps(body, route.serializer)
        channel = self._channel_for_publishing()
        message = channel.prepare_message(
            data,
            route.priority,
            content_type,
            content_encoding,
            headers,
            {**properties, "delivery_mode": route.delivery_mode},
        )
        return channel, message, route, task_id

    def _channel_for_publishing(self) -> Any:  # kombu's Redis channel, as above
        channel = self._channel
        if channel is None:
            with self._lock:
                if self._channel is None:
                    connection = self.app.connection_for_write()
                    try:
                        self._channel = connection.channel()
                    except BaseException:
                        connection.release()
                        raise
                    self._connection = connection  # the channel belongs to it: kept with it
                channel = self._channel
        return channel

    def _route(self, name: str) -> _Route:
        route = self._routes.get(name)
        if route is None:
            route = self._routes[name] = _Route.of(self.app, name)
        return route


@dataclass(frozen=True)
class QueuedMessage:
    """A task message as kombu's Redis channel pushes it: LPUSH `payload` onto `key`."""

    key: str
    payload: str


# Arguments a template takes: strings that Celery's argsrepr (saferepr) writes as repr() does,
# neither shortened nor escaped (a diagnosis id).
_PLAIN = re.compile(r"[A-Za-z0-9._:-]{1,200}")


@dataclass(frozen=True)
class _MessageTemplate:
    """A task's message as kombu's Redis channel pushes it (Celery's protocol 2, JSON, the body
    base64-encoded), made once a process: what changes from one message to the next is put in
    (the task id, which is also its root and correlation id; the arguments and their repr; the
    thread's reply-to; kombu's delivery tag). tests/plumbing/test_broker.py holds it equal to
    Celery's own message."""

    key: str
    decoded: dict[str, Any]  # the message as pushed, decoded: its task's id and arguments
    kwargs: dict[str, Any]  # the body's keyword arguments
    embed: dict[str, object]  # Celery's embedded options (callbacks, chain, chord), as they came
    pid: int  # Celery's `origin` header names the process

    @classmethod
    def of(cls, queued: QueuedMessage) -> _MessageTemplate:
        decoded = json.loads(queued.payload)
        _, kwargs, embed = json.loads(base64.b64decode(decoded["body"]))
        return cls(queued.key, decoded, kwargs, embed, os.getpid())

    def message(self, args: tuple[object, ...], *, reply_to: str) -> QueuedMessage:
        task_id = uuid()
        decoded = self.decoded
        body = kombu_json.dumps([list(args), self.kwargs, self.embed])
        message = {
            **decoded,
            "body": base64.b64encode(body.encode()).decode(),
            "headers": {
                **decoded["headers"],
                "id": task_id,
                "root_id": task_id,
                "argsrepr": repr(args),
            },
            "properties": {
                **decoded["properties"],
                "correlation_id": task_id,
                "reply_to": reply_to,
                "delivery_tag": uuid(),
            },
        }
        return QueuedMessage(key=self.key, payload=kombu_json.dumps(message))


class _Commands:
    """Takes the place of kombu's PublishBatch for one message: keeps the commands the channel
    would send instead of sending them."""

    def __init__(self) -> None:
        # the Redis commands as kombu's channel gives them: LPUSH's key and JSON text
        self.sent: list[tuple[str, tuple[Any, ...]]] = []

    def add(self, name: str, *args: Any) -> None:  # as above
        self.sent.append((name, args))


@dataclass(frozen=True)
class _Route:
    """What `send_task` works out for a task name on every call, worked out once."""

    queue: str
    priority: int | None
    delivery_mode: int | None
    serializer: str
    time_limit: float | None
    soft_time_limit: float | None
    ignore_result: bool | None

    @classmethod
    def of(cls, app: Any, name: str) -> _Route:  # Celery's app, as TaskPublisher's
        task = app.tasks.get(name)
        options = {}
        if task is not None:
            options = {k: v for k, v in task._get_exec_options().items() if v is not None}
        routed = app.amqp.router.route(dict(options), name, (), {}, task)
        queue = routed.get("queue") or app.amqp.default_queue
        if isinstance(queue, str):
            queue = app.amqp.queues[queue]
        exchange = queue.exchange
        if (exchange.type or "direct") != "direct" or routed.get("exchange"):
            raise ValueError(f"{name} is not routed to a direct exchange's queue")
        return cls(
            queue=queue.name,
            priority=options.get("priority"),
            delivery_mode=maybe_delivery_mode(
                options.get("delivery_mode")
                or exchange.delivery_mode
                or app.conf.task_default_delivery_mode
            ),
            serializer=options.get("serializer") or app.conf.task_serializer,
            time_limit=options.get("time_limit"),
            soft_time_limit=options.get("soft_time_limit"),
            ignore_result=task.ignore_result if task is not None else None,
        )
