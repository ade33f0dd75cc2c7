"""Sending the outbox: one attempt of a delivery (a signed POST, or e-mails), recorded, with the
decision whether and when to try again, and the sweep of deliveries whose message was lost.

Receivers deduplicate by `webhook-id`, which is the delivery's id: a task that re-runs after a
worker died sends the same id.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import random
import smtplib
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urljoin, urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from standardwebhooks import Webhook as Signer

from alerts.models import DeliveryAttempt, Webhook, WebhookDelivery
from alerts.payloads import email_text, slack_message
from alerts.services import enqueue_delivery

logger = logging.getLogger(__name__)

# Retries: exponential from BACKOFF_FIRST_SECONDS, capped, with jitter; none after GIVE_UP_AFTER.
BACKOFF_FIRST_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 3600.0
GIVE_UP_AFTER = timedelta(days=1)
TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 3
EXCERPT_CHARS = 500
# A message scheduled for an attempt counts as due this much before the row says so.
DUE_TOLERANCE = timedelta(seconds=1)


class RefusedAddress(Exception):
    """The URL's host resolves to an address we do not send to."""


def resolve(host: str, port: int) -> list[str]:
    """The addresses a host name resolves to (an address literal resolves to itself). The one
    resolver the webhooks use: the check and the connection both take its answer."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise RefusedAddress(f"{host} does not resolve") from None
    return [str(info[4][0]).split("%", 1)[0] for info in infos]


@dataclass(frozen=True)
class Destination:
    """A URL resolved once and checked: the request goes to `address`, whatever the name would
    resolve to a moment later (DNS rebinding), with the name in the Host header and TLS SNI."""

    url: str
    host: str
    port: int
    address: str

    @property
    def pinned_url(self) -> str:
        parts = urlsplit(self.url)
        literal = f"[{self.address}]" if ":" in self.address else self.address
        return parts._replace(netloc=f"{literal}:{self.port}").geturl()

    @property
    def host_header(self) -> str:
        parts = urlsplit(self.url)
        default = 443 if parts.scheme == "https" else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == default else f"{name}:{self.port}"


def check_destination(url: str) -> Destination:
    """Resolves the URL's host once and refuses it if any address is private, loopback,
    link-local or otherwise non-public (unless WEBHOOKS_ALLOW_PRIVATE_ADDRESSES), so a webhook
    cannot reach inside our network. The request then connects to the address checked here."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RefusedAddress("not an http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise RefusedAddress("not a valid port") from None
    addresses = resolve(parts.hostname, port)
    if not addresses:
        raise RefusedAddress(f"{parts.hostname} does not resolve")
    if not settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES:
        for text in addresses:
            address = ipaddress.ip_address(text)
            if not address.is_global or address.is_multicast:
                raise RefusedAddress(f"{parts.hostname} resolves to a non-public address")
    return Destination(url=url, host=parts.hostname, port=port, address=addresses[0])


def signed_headers(webhook: Webhook, message_id: str, body: str) -> dict[str, str]:
    now = timezone.now()
    return {
        "content-type": "application/json",
        "user-agent": "rootcause-webhooks",
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Signer(webhook.secret).sign(message_id, now, body),
    }


@dataclass(frozen=True)
class Sent:
    status_code: int | None
    excerpt: str
    error: str
    latency_ms: int
    # An e-mail has no status code: handed to the mail server is delivered.
    mailed: bool = False

    @property
    def delivered(self) -> bool:
        return self.mailed or (self.status_code is not None and 200 <= self.status_code < 300)


def transport() -> httpx.BaseTransport:
    """The HTTP transport of outgoing webhooks (a seam for tests standing in for the internet)."""
    return httpx.HTTPTransport()


def _post(
    client: httpx.Client, destination: Destination, body: str, headers: dict[str, str]
) -> httpx.Response:
    """One POST to the checked address: the URL names the address, the Host header and TLS's
    server name (SNI, and so the certificate check) name the host."""
    return client.post(
        destination.pinned_url,
        content=body.encode(),
        headers={**headers, "host": destination.host_header},
        extensions={"sni_hostname": destination.host},
    )


def _send(url: str, body: str, headers: dict[str, str]) -> Sent:
    """One POST, following redirects by hand so that every hop is resolved, checked and pinned."""
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        with httpx.Client(
            timeout=TIMEOUT_SECONDS, follow_redirects=False, transport=transport()
        ) as client:
            for _ in range(MAX_REDIRECTS + 1):
                response = _post(client, check_destination(url), body, headers)
                location = response.headers.get("location")
                if response.is_redirect and location:
                    url = urljoin(url, location)
                    continue
                return Sent(response.status_code, response.text[:EXCERPT_CHARS], "", elapsed())
            return Sent(None, "", "too many redirects", elapsed())
    except RefusedAddress as exc:
        return Sent(None, "", f"refused: {exc}", elapsed())
    except httpx.TimeoutException:
        return Sent(None, "", "timed out", elapsed())
    except httpx.HTTPError as exc:
        return Sent(None, "", f"no answer ({type(exc).__name__})", elapsed())


def _retryable(sent: Sent) -> bool:
    if sent.error.startswith(("refused", "too many")):
        return False
    if sent.status_code is None:
        return True  # a timeout or a connection error
    return sent.status_code >= 500 or sent.status_code == 429


def backoff_seconds(attempts: int) -> float:
    """Exponential in the attempts made, capped, with full jitter over its upper half."""
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** max(attempts - 1, 0))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


@dataclass(frozen=True)
class Busy:
    """Another task holds the delivery's lease; look again when it expires."""

    retry_after: float


def _lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)


def _claim(delivery_id: uuid.UUID | str) -> WebhookDelivery | Busy | None:
    """Compare-and-set: takes a pending delivery whose attempt is due and whose lease is free.
    None when there is nothing to do: not pending (delivered, given up, deleted) or not yet due
    (a duplicate message: the one scheduled for the next attempt comes later)."""
    now = timezone.now()
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + DUE_TOLERANCE)
    free = Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    pending = WebhookDelivery.objects.filter(id=delivery_id, state=WebhookDelivery.State.PENDING)
    try:
        claimed = pending.filter(due & free).update(leased_until=now + _lease())
    except (ValueError, ValidationError):
        return None
    row = pending.select_related("webhook").first()
    if row is None:
        return None
    if claimed:
        return row
    if row.leased_until is not None and row.leased_until >= now:
        return Busy(max(1.0, (row.leased_until - now).total_seconds()))
    return None


def attempt_delivery(*, delivery_id: uuid.UUID | str) -> float | Busy | None:
    """Sends a pending delivery once and records the attempt. Returns the seconds to wait before
    the next attempt, Busy when another task is sending it (it may have been killed: look again
    when its lease expires), or None when there is nothing to do."""
    delivery = _claim(delivery_id)
    if not isinstance(delivery, WebhookDelivery):
        return delivery
    if delivery.webhook.channel == Webhook.Channel.EMAIL:
        sent = _send_email(delivery)
    else:
        body = json.dumps(
            slack_message(delivery.payload)
            if delivery.webhook.payload_format == Webhook.Format.SLACK
            else delivery.payload,
            separators=(",", ":"),
        )
        sent = _send(
            delivery.webhook.url, body, signed_headers(delivery.webhook, str(delivery.id), body)
        )
    now = timezone.now()
    given_up = not sent.delivered and (
        not _retryable(sent) or now - delivery.created_at >= GIVE_UP_AFTER
    )
    state = (
        WebhookDelivery.State.DELIVERED
        if sent.delivered
        else WebhookDelivery.State.FAILED
        if given_up
        else WebhookDelivery.State.PENDING
    )
    next_at = now + timedelta(seconds=backoff_seconds(delivery.attempts + 1))
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            organization_id=delivery.organization_id,
            delivery=delivery,
            status_code=sent.status_code,
            latency_ms=sent.latency_ms,
            error=sent.error[:255],
            response_excerpt=sent.excerpt,
        )
        WebhookDelivery.objects.filter(id=delivery.id).update(
            attempts=delivery.attempts + 1,
            state=state,
            leased_until=None,
            next_attempt_at=next_at if state == WebhookDelivery.State.PENDING else None,
            finished_at=None if state == WebhookDelivery.State.PENDING else now,
        )
    if state != WebhookDelivery.State.PENDING:
        if given_up:
            logger.warning("webhook delivery %s given up: %s", delivery.id, sent.status_code)
        return None
    # Measured after the commit, so the message is never due before the row says it is.
    return max(0.0, (next_at - timezone.now()).total_seconds())


def sweep_pending_deliveries() -> int:
    """Enqueues pending deliveries whose message was lost: a worker killed between the commit
    that wrote the row and the message's publication, or a scheduled attempt's message gone
    from Redis. Their attempt is overdue by a lease and nobody holds them (the beat, every
    minute). A duplicate message is harmless: the claim lets one of them send."""
    now = timezone.now()
    overdue = now - _lease()
    stale = WebhookDelivery.objects.filter(state=WebhookDelivery.State.PENDING).filter(
        Q(next_attempt_at__lt=overdue) | Q(next_attempt_at__isnull=True, created_at__lt=overdue),
        Q(leased_until__isnull=True) | Q(leased_until__lt=now),
    )
    count = 0
    for delivery_id in stale.values_list("id", flat=True)[:500]:
        enqueue_delivery(delivery_id)
        count += 1
    if count:
        logger.info("re-enqueued %d pending deliveries", count)
    return count


def _send_email(delivery: WebhookDelivery) -> Sent:
    """One e-mail per recipient still a member of the organisation; the delivery's id in a
    header, as a webhook's `webhook-id`."""
    started = time.monotonic()
    recipients = list(
        delivery.webhook.recipients.filter(
            is_active=True, memberships__organization_id=delivery.organization_id
        ).values_list("email", flat=True)
    )
    if not recipients:
        return Sent(None, "", "refused: no recipient is still a member", 0)
    subject, body = email_text(delivery.payload)
    messages = [
        EmailMessage(
            subject=subject,
            body=body,
            to=[address],
            headers={"X-Rootcause-Delivery": str(delivery.id)},
        )
        for address in recipients
    ]
    try:
        with get_connection() as connection:
            sent = connection.send_messages(messages) or 0
    except (OSError, smtplib.SMTPException) as exc:
        elapsed = int((time.monotonic() - started) * 1000)
        return Sent(None, "", f"no answer ({type(exc).__name__})", elapsed)
    elapsed = int((time.monotonic() - started) * 1000)
    return Sent(None, f"mailed to {sent} member{'s' if sent != 1 else ''}", "", elapsed, True)
