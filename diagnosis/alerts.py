"""Alerts on finished diagnoses: organisation webhooks, the outbox and its delivery.

The outbox row (`WebhookDelivery`) is written in the transaction that marks the diagnosis done
(`enqueue_alerts`, called by `services.complete_stage`), one per endpoint whose filters match;
a unique constraint on (diagnosis, webhook) makes a second completion write nothing. After commit
the task `workers.tasks.deliver_webhook` (named, not imported) sends it through
`attempt_delivery`, which signs it the Standard Webhooks way, records the attempt and says whether
and when to try again. Receivers deduplicate by `webhook-id`, which is the delivery's id: a task
that re-runs after a worker died sends the same id.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import random
import secrets
import smtplib
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

import celery
import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone
from standardwebhooks import Webhook as Signer

from accounts.actors import Actor
from accounts.models import Organization
from accounts.selectors import Forbidden, require_manager
from billing_tiers.selectors import entitlements_for, entitlements_for_organization
from config import sql
from config.problems import ApplicationError
from diagnosis.models import DeliveryAttempt, Diagnosis, Webhook, WebhookDelivery
from diagnosis.recurrence import recurrence_of
from diagnosis.selectors import stored_result
from rootcause.result import as_json

logger = logging.getLogger(__name__)
User = get_user_model()

DELIVER_TASK = "workers.tasks.deliver_webhook"
EVENT_DIAGNOSIS_DONE = "diagnosis.done"
EVENT_TEST = "webhook.test"
# Retries: exponential from BACKOFF_FIRST_SECONDS, capped, with jitter; none after GIVE_UP_AFTER.
BACKOFF_FIRST_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 3600.0
GIVE_UP_AFTER = timedelta(days=1)
TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 3
EXCERPT_CHARS = 500
# A message scheduled for an attempt counts as due this much before the row says so.
DUE_TOLERANCE = timedelta(seconds=1)


# --- Endpoints ----------------------------------------------------------------------------------


def _require_alerts(organization: Organization, actor: Actor | None = None) -> None:
    entitled = entitlements_for(actor) if actor else entitlements_for_organization(organization)
    if not entitled.alerts:
        raise Forbidden(
            f"Alerts come with the {entitled.unlocked_by('alerts')} tier "
            f"(this organisation is on {entitled.tier_label})."
        )


def webhooks_for(actor: Actor, channel: str = Webhook.Channel.WEBHOOK) -> QuerySet[Webhook]:
    """The organisation's webhooks (or e-mail alerts): owners and admins, on a tier with alerts."""
    organization = require_manager(actor)
    _require_alerts(organization, actor)
    return Webhook.objects.filter(organization=organization, channel=channel).order_by("created_at")


def email_alerts_for(actor: Actor) -> QuerySet[Webhook]:
    return webhooks_for(actor, Webhook.Channel.EMAIL).prefetch_related(
        "recipients", "recipients__memberships"
    )


def get_webhook_for(
    actor: Actor, webhook_id: uuid.UUID | str, channel: str = Webhook.Channel.WEBHOOK
) -> Webhook:
    try:
        return webhooks_for(actor, channel).get(id=webhook_id)
    except (Webhook.DoesNotExist, ValueError, ValidationError):
        raise Http404("No such webhook.") from None


def get_delivery_for(
    actor: Actor,
    webhook_id: uuid.UUID | str,
    delivery_id: uuid.UUID | str,
    channel: str = Webhook.Channel.WEBHOOK,
) -> WebhookDelivery:
    webhook = get_webhook_for(actor, webhook_id, channel)
    try:
        return webhook.deliveries.get(id=delivery_id)
    except (WebhookDelivery.DoesNotExist, ValueError, ValidationError):
        raise Http404("No such delivery.") from None


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class WebhookFilters:
    category: str = ""
    failure_slug: str = ""
    min_confidence: float = 0.0
    first_occurrence_only: bool = False
    payload_format: str = Webhook.Format.STANDARD

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> WebhookFilters:
        """From a form's cleaned data or a serializer's validated data: what is absent or empty
        filters nothing."""
        return cls(
            category=data.get("category") or "",
            failure_slug=data.get("failure_slug") or "",
            min_confidence=data.get("min_confidence") or 0.0,
            first_occurrence_only=bool(data.get("first_occurrence_only")),
            payload_format=data.get("payload_format") or Webhook.Format.STANDARD,
        )


def create_webhook(*, actor: Actor, url: str, filters: WebhookFilters) -> Webhook:
    """A new endpoint with a generated secret (the caller shows it once)."""
    organization = require_manager(actor)
    _require_alerts(organization, actor)
    if urlsplit(url).scheme not in ("http", "https"):
        raise ApplicationError("A webhook URL is http or https.")
    return Webhook.objects.create(
        organization=organization,
        url=url,
        secret=new_secret(),
        category=filters.category,
        failure_slug=filters.failure_slug,
        min_confidence=filters.min_confidence,
        first_occurrence_only=filters.first_occurrence_only,
        payload_format=filters.payload_format,
        created_by=actor.user,
    )


def create_email_alert(
    *, actor: Actor, member_ids: list[uuid.UUID | str], filters: WebhookFilters
) -> Webhook:
    """An e-mail alert to chosen members of the organisation (by their membership's public id),
    with filters."""
    organization = require_manager(actor)
    _require_alerts(organization, actor)
    wanted = {str(member_id) for member_id in member_ids}
    members = list(
        User.objects.filter(
            is_active=True,
            memberships__organization=organization,
            memberships__public_id__in=wanted,
        )
    )
    if not members or len(members) != len(wanted):
        raise ApplicationError("Choose one or more members of the organisation.")
    with transaction.atomic():
        alert = Webhook.objects.create(
            organization=organization,
            channel=Webhook.Channel.EMAIL,
            secret="",
            category=filters.category,
            failure_slug=filters.failure_slug,
            min_confidence=filters.min_confidence,
            first_occurrence_only=filters.first_occurrence_only,
            created_by=actor.user,
        )
        alert.recipients.set(members)
    return alert


def delete_webhook(*, actor: Actor, webhook: Webhook) -> None:
    require_manager(actor)
    webhook.delete()


# --- The outbox ---------------------------------------------------------------------------------


def site_link(path: str) -> str:
    return urljoin(settings.SITE_URL.rstrip("/") + "/", path.lstrip("/"))


def diagnosis_payload(diagnosis: Diagnosis) -> dict[str, Any]:
    """The event body: the typed result (masked text only; the fix only if the tier includes it,
    as the result stored it) and the fields a receiver routes on."""
    result = stored_result(diagnosis)
    data: dict[str, Any] = {"diagnosis_id": str(diagnosis.id), "link": ""}
    data["link"] = site_link(f"/diagnoses/{diagnosis.id}/")
    if result is not None:
        full = as_json(result)
        data.update(
            failure=full.get("failure"),
            root_cause=full.get("root_cause"),
            initiating_rank=full.get("initiating_rank"),
            collateral=full.get("collateral", []),
            remediation=full.get("remediation"),
            result=full,
        )
    return {
        "type": EVENT_DIAGNOSIS_DONE,
        "timestamp": timezone.now().isoformat(),
        "data": data,
    }


def _slack_escaped(text: str) -> str:
    """Text for Slack's mrkdwn: &, < and > are its control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(payload: dict[str, Any]) -> dict[str, Any]:
    """The event as a Slack-compatible incoming-webhook message: `text` (one line with the link,
    for notifications and clients without blocks) and `blocks` (the failure as a linked heading,
    the root cause, the initiating rank)."""
    data = payload.get("data", {})
    if payload.get("type") != EVENT_DIAGNOSIS_DONE:
        text = f"rootcause: test event for webhook {data.get('webhook_id', '')}"
        return {"text": text, "blocks": [_slack_section(_slack_escaped(text))]}
    failure = data.get("failure") or {}
    what = failure.get("title") or "no known failure"
    rank = data.get("initiating_rank")
    where = f" (rank {rank} failed first)" if rank is not None else ""
    cause = data.get("root_cause") or ""
    link = data.get("link") or ""
    heading = f"*<{link}|{_slack_escaped(what)}>*"
    if failure.get("category"):
        heading += f" · {_slack_escaped(str(failure['category']))}"
    if failure.get("confidence") is not None:
        heading += f" · confidence {float(failure['confidence']):.2f}"
    blocks = [_slack_section(heading)]
    if cause:
        blocks.append(_slack_section(_slack_escaped(cause)))
    if rank is not None:
        blocks.append(
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": f"Rank {rank} failed first."}],
            }
        )
    return {"text": f"rootcause: {what}{where}: {cause} <{link}>", "blocks": blocks}


def _slack_section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _matches(webhook: Webhook, diagnosis: Diagnosis, payload: dict[str, Any]) -> bool:
    failure = payload["data"].get("failure") or {}
    if webhook.failure_slug and webhook.failure_slug != diagnosis.failure_slug:
        return False
    if webhook.category and webhook.category != failure.get("category"):
        return False
    if webhook.min_confidence and float(failure.get("confidence") or 0) < webhook.min_confidence:
        return False
    if webhook.first_occurrence_only:
        seen = recurrence_of(diagnosis)
        # The diagnosis itself is one occurrence: first means the only one.
        if not diagnosis.failure_slug or (seen is not None and seen.total > 1):
            return False
    return True


# The organisation of a diagnosis, when the caller of enqueue_alerts does not know it.
_UNKNOWN: Any = object()


def _has_alert_endpoints(organization_id: uuid.UUID | str) -> bool:
    """Whether the organisation has any webhook or e-mail alert: one indexed lookup, in SQL of
    its own because it runs for every finished diagnosis and Django's query compilation would
    cost more than the query."""
    return bool(
        sql.fetch_all(
            "SELECT 1 FROM diagnosis_webhook WHERE organization_id = %s LIMIT 1",
            [sql.param(Webhook, "organization", organization_id)],
        )
    )


def enqueue_alerts(
    diagnosis_id: uuid.UUID | str, *, organization_id: uuid.UUID | None = _UNKNOWN
) -> int:
    """Writes the outbox rows for a diagnosis that has just finished, in the caller's transaction,
    and enqueues their delivery after commit. Running it twice writes nothing more.

    A caller that knows the diagnosis's organisation (it never changes) passes it: a visitor's
    diagnosis then costs no query, and one of an organisation without alerts a single lookup;
    the row is read only when there is an endpoint to alert."""
    if organization_id is None:
        return 0  # a visitor's diagnosis alerts nobody
    if organization_id is not _UNKNOWN and not _has_alert_endpoints(organization_id):
        return 0
    diagnosis = Diagnosis.objects.filter(id=diagnosis_id).first()
    if diagnosis is None or diagnosis.organization_id is None:
        return 0  # a visitor's diagnosis alerts nobody
    webhooks = list(Webhook.objects.filter(organization_id=diagnosis.organization_id))
    if not webhooks or not entitlements_for_organization(diagnosis.organization).alerts:
        return 0
    payload = diagnosis_payload(diagnosis)
    # Rows already written (a completion that ran before) are neither written nor sent again.
    done = set(
        WebhookDelivery.objects.filter(diagnosis=diagnosis).values_list("webhook_id", flat=True)
    )
    rows = [
        WebhookDelivery(
            organization_id=diagnosis.organization_id,
            webhook=webhook,
            diagnosis=diagnosis,
            event_type=EVENT_DIAGNOSIS_DONE,
            payload=payload,
        )
        for webhook in webhooks
        if webhook.id not in done and _matches(webhook, diagnosis, payload)
    ]
    if not rows:
        return 0
    # The constraint settles a race between two completions: the loser's rows are skipped, and
    # only rows this call inserted are enqueued.
    WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    created = list(
        WebhookDelivery.objects.filter(id__in=[row.id for row in rows]).values_list("id", flat=True)
    )
    for delivery_id in created:
        _enqueue_delivery(delivery_id)
    return len(created)


def _enqueue_delivery(delivery_id: uuid.UUID, countdown: float = 0) -> None:
    signature = celery.signature(DELIVER_TASK, args=(str(delivery_id),))
    transaction.on_commit(lambda: signature.apply_async(countdown=countdown))


def send_test_event(*, actor: Actor, webhook: Webhook) -> WebhookDelivery:
    require_manager(actor)
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            organization=webhook.organization,
            webhook=webhook,
            event_type=EVENT_TEST,
            payload={
                "type": EVENT_TEST,
                "timestamp": timezone.now().isoformat(),
                "data": {"webhook_id": str(webhook.id), "link": site_link("/")},
            },
        )
        _enqueue_delivery(delivery.id)
    return delivery


def redeliver(*, actor: Actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """Sends a delivery again, whatever became of it: same body, same `webhook-id`, a fresh day."""
    require_manager(actor)
    with transaction.atomic():
        WebhookDelivery.objects.filter(id=delivery.id).update(
            state=WebhookDelivery.State.PENDING,
            created_at=timezone.now(),
            finished_at=None,
            next_attempt_at=None,
        )
        _enqueue_delivery(delivery.id)
    delivery.refresh_from_db()
    return delivery


# --- Sending ------------------------------------------------------------------------------------


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
        _enqueue_delivery(delivery_id)
        count += 1
    if count:
        logger.info("re-enqueued %d pending deliveries", count)
    return count


# --- E-mail -------------------------------------------------------------------------------------


def email_text(payload: dict[str, Any]) -> tuple[str, str]:
    """The subject and the plain-text body of an alert e-mail: masked text only (the stored
    result), with the link to the result."""
    data = payload.get("data", {})
    if payload.get("type") != EVENT_DIAGNOSIS_DONE:
        return (
            "rootcause: test alert",
            "This is a test of a rootcause e-mail alert: alerts on finished diagnoses that "
            f"match its filters come to this address.\n\n{data.get('link', '')}\n",
        )
    failure = data.get("failure") or {}
    title = failure.get("title") or "No known failure matched"
    lines = [title]
    if failure.get("category") or failure.get("confidence") is not None:
        lines[0] += (
            f" ({failure.get('category', '')}, confidence {failure.get('confidence', 0):.2f})"
        )
    if data.get("root_cause"):
        lines += ["", f"Root cause: {data['root_cause']}"]
    if data.get("initiating_rank") is not None:
        lines += [f"Rank {data['initiating_rank']} failed first; the others followed from it."]
    steps = (data.get("remediation") or {}).get("steps") or []
    if steps:
        lines += ["", "Fix:", *(f"{n}. {step}" for n, step in enumerate(steps, 1))]
    lines += ["", f"The result: {data.get('link', '')}", ""]
    return f"rootcause: {title}", "\n".join(lines)


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


def deliveries_for(actor: Actor, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """The delivery log of an endpoint, newest first, with each attempt."""
    require_manager(actor)
    return webhook.deliveries.order_by("-created_at").prefetch_related("attempt_log")
