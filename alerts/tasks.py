"""The alerts' Celery tasks: sending one outbox row, and the sweep of rows whose message was lost.

Both keep the names they were registered under when they lived in workers/tasks.py: a delivery
is enqueued by name (`services.DELIVER_TASK`), its scheduled retries wait in Redis for up to an
hour, and the beat (config/celery.py) names the sweep; messages published before a deploy must
still find their task after it.
"""

from __future__ import annotations

from celery import shared_task

from alerts import delivery


@shared_task(
    name="workers.tasks.deliver_webhook",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=60,
    time_limit=90,
)
def deliver_webhook(delivery_id: str) -> None:
    """Sends one outbox row; on a timeout, a 5xx or a 429, again later with backoff and jitter.

    The next attempt is a new message with a countdown rather than a Celery retry: the service
    bounds the attempts (a day after the event), and the outbox row, not the message, holds the
    state (when the next attempt is due, who holds it): a duplicate message does nothing, and a
    lost one is found by `sweep_pending_deliveries`.
    """
    wait = delivery.attempt_delivery(delivery_id=delivery_id)
    if isinstance(wait, delivery.Busy):
        # Another task is sending it, or was killed doing so: look again when its lease expires.
        deliver_webhook.apply_async(args=(delivery_id,), countdown=wait.retry_after)
    elif wait is not None:
        deliver_webhook.apply_async(args=(delivery_id,), countdown=wait)


@shared_task(name="workers.tasks.sweep_pending_deliveries", acks_late=True, time_limit=120)
def sweep_pending_deliveries() -> int:
    return delivery.sweep_pending_deliveries()
