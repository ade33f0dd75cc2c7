"""`/metrics` for operators, in the Prometheus text format: computed from the database and the
queue at scrape time, so every web process answers the same figures without a shared registry.

No label carries tenant data: statuses, outcomes, stage names and failure classes (the catalogue's
public slugs) only; never an organisation, a user, a file name or a diagnosis id.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import redis
from django.conf import settings
from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from diagnosis.models import Diagnosis, WebhookDelivery

# Counted in this process when a submission is refused for its quota (diagnosis.services).
QUOTA_REFUSALS = Counter(
    "rootcause_quota_refusals", "Submissions refused because the daily quota was used."
)
# The window the duration figures average over.
RECENT = timedelta(hours=1)


class DatabaseCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        by_outcome = GaugeMetricFamily(
            "rootcause_diagnoses",
            "Diagnoses kept, by status, outcome and failure class.",
            labels=["status", "outcome", "failure_class"],
        )
        rows = (
            Diagnosis.objects.values("status", "outcome", "failure_slug")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            by_outcome.add_metric(
                [row["status"], row["outcome"] or "none", row["failure_slug"] or "none"], row["n"]
            )
        yield by_outcome

        duration = GaugeMetricFamily(
            "rootcause_diagnosis_seconds_avg",
            "Mean seconds from submission to done, over diagnoses finished in the last hour.",
        )
        recent = Diagnosis.objects.filter(
            status=Diagnosis.Status.DONE, finished_at__gte=timezone.now() - RECENT
        ).aggregate(
            mean=Avg(
                ExpressionWrapper(F("finished_at") - F("created_at"), output_field=DurationField())
            )
        )["mean"]
        duration.add_metric([], recent.total_seconds() if recent else 0.0)
        yield duration

        active = GaugeMetricFamily(
            "rootcause_diagnoses_active", "Diagnoses in each active stage.", labels=["stage"]
        )
        counts = dict(
            Diagnosis.objects.filter(status__in=Diagnosis.ACTIVE_STATUSES)
            .values_list("status")
            .annotate(n=Count("id"))
            .order_by()
        )
        for status in Diagnosis.ACTIVE_STATUSES:
            active.add_metric([status.value], counts.get(status.value, 0))
        yield active

        outbox = GaugeMetricFamily(
            "rootcause_webhook_deliveries", "Alert deliveries by state.", labels=["state"]
        )
        states = dict(
            WebhookDelivery.objects.values_list("state").annotate(n=Count("id")).order_by()
        )
        for state in WebhookDelivery.State:
            outbox.add_metric([state.value], states.get(state.value, 0))
        yield outbox

        queue = GaugeMetricFamily(
            "rootcause_queue_depth", "Messages waiting in the Celery queue.", labels=["queue"]
        )
        queue.add_metric(["celery"], _queue_depth())
        yield queue


def _queue_depth() -> int:
    """The length of Celery's default queue in Redis; 0 in embedded mode (tasks run inline)."""
    if not settings.REDIS_URL:
        return 0
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1)
        prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")
        return int(client.llen(f"{prefix}celery"))
    except (redis.RedisError, AttributeError):
        return -1  # unknown: Redis did not answer


def metrics(request: HttpRequest) -> HttpResponse:
    registry = CollectorRegistry()
    registry.register(DatabaseCollector())
    registry.register(QUOTA_REFUSALS)
    return HttpResponse(generate_latest(registry), content_type="text/plain; version=0.0.4")
