"""`/metrics` for operators, in the Prometheus text format: computed from the database and the
queue at scrape time, so every web process answers the same figures without a shared registry.

No label carries tenant data: statuses, outcomes, stage names and failure classes (the catalogue's
public slugs) only; never an organisation, a user, a file name or a diagnosis id.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from functools import cache
from typing import cast

import redis
from django.conf import settings
from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from diagnosis.models import Diagnosis
from diagnosis.pipeline.table import active_statuses, stages


class SharedCounter:
    """A counter every process adds to and any web process reports: a Redis key under the
    deployment's prefix (this process's memory in the embedded mode). Adding never raises."""

    def __init__(self, name: str, documentation: str) -> None:
        self.name = name
        self.documentation = documentation
        self._local = 0.0

    def _key(self) -> str:
        return f"{settings.REDIS_KEY_PREFIX}metrics:{self.name}"

    def inc(self, amount: float = 1.0) -> None:
        if not settings.REDIS_URL:
            with _LOCAL_LOCK:
                self._local += amount
            return
        with contextlib.suppress(redis.RedisError):
            _redis(settings.REDIS_URL).incrbyfloat(self._key(), amount)

    def value(self) -> float:
        if not settings.REDIS_URL:
            return self._local
        try:
            return float(cast("bytes | None", _redis(settings.REDIS_URL).get(self._key())) or 0)
        except redis.RedisError:
            return 0.0

    def family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, value=self.value())


# The window the duration figures average over.
RECENT = timedelta(hours=1)
# Upper bounds (seconds) of the stage-duration histogram's buckets; +Inf is added.
STAGE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 240.0)


# --- Stage durations ----------------------------------------------------------------------------
# Observed by the worker that ran the stage, read by whichever web process is scraped: so they are
# kept in Redis (one hash per stage: a count per bucket, the count and the sum), or in this
# process in the embedded mode, where stages run in the web process.

_LOCAL: dict[str, dict[str, float]] = {}
_LOCAL_LOCK = threading.Lock()


@cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


# Counted when a submission is refused for its quota (diagnosis.services), by whichever web process
# refused it.
QUOTA_REFUSALS = SharedCounter(
    "rootcause_quota_refusals", "Submissions refused because the daily quota was used."
)


def _stage_key(stage: str) -> str:
    return f"{settings.REDIS_KEY_PREFIX}metrics:stage_seconds:{stage}"


def _bucket_of(seconds: float) -> str:
    return next((str(bound) for bound in STAGE_BUCKETS if seconds <= bound), "+Inf")


def observe_stage(stage: str, seconds: float) -> None:
    """Records how long one run of a stage took (by the stage's name only). Never raises: a
    figure lost to a Redis hiccup must not fail the diagnosis."""
    observe_stages([(stage, seconds)])


def observe_stages(durations: Iterable[tuple[str, float]]) -> None:
    """Records runs of stages, (stage name, seconds) each, in one Redis round trip: a worker
    records the stages it ran for a diagnosis together. Never raises, like observe_stage."""
    durations = list(durations)
    if not durations:
        return
    if not settings.REDIS_URL:
        with _LOCAL_LOCK:
            for stage, seconds in durations:
                figures = _LOCAL.setdefault(stage, {})
                for field, by in ((_bucket_of(seconds), 1.0), ("count", 1.0), ("sum", seconds)):
                    figures[field] = figures.get(field, 0.0) + by
        return
    try:
        pipe = _redis(settings.REDIS_URL).pipeline(transaction=False)
        for stage, seconds in durations:
            key = _stage_key(stage)
            pipe.hincrby(key, _bucket_of(seconds), 1)
            pipe.hincrby(key, "count", 1)
            pipe.hincrbyfloat(key, "sum", seconds)
        pipe.execute()
    except redis.RedisError:
        pass


def _stage_figures(stage: str) -> dict[str, float]:
    if not settings.REDIS_URL:
        with _LOCAL_LOCK:
            return dict(_LOCAL.get(stage, {}))
    try:
        raw = cast("dict[bytes, bytes]", _redis(settings.REDIS_URL).hgetall(_stage_key(stage)))
    except redis.RedisError:
        return {}
    return {(k.decode() if isinstance(k, bytes) else str(k)): float(v) for k, v in raw.items()}


def _stage_histogram() -> HistogramMetricFamily:
    histogram = HistogramMetricFamily(
        "rootcause_stage_seconds",
        "Seconds each run of a pipeline stage took, by stage (observed by the workers).",
        labels=["stage"],
    )
    for stage in stages():
        figures = _stage_figures(stage.status)
        cumulative, buckets = 0.0, []
        for bound in (*map(str, STAGE_BUCKETS), "+Inf"):
            cumulative += figures.get(bound, 0.0)
            buckets.append((bound, cumulative))
        histogram.add_metric([stage.status], buckets, figures.get("sum", 0.0))
    return histogram


class DatabaseCollector(Collector):
    def collect(
        self,
    ) -> Iterator[GaugeMetricFamily | HistogramMetricFamily | CounterMetricFamily]:
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
            Diagnosis.objects.filter(status__in=active_statuses())
            .values_list("status")
            .annotate(n=Count("id"))
            .order_by()
        )
        for status in active_statuses():
            active.add_metric([status], counts.get(status, 0))
        yield active

        queue = GaugeMetricFamily(
            "rootcause_queue_depth", "Messages waiting in the Celery queue.", labels=["queue"]
        )
        queue.add_metric(["celery"], _queue_depth())
        yield queue

        yield _stage_histogram()
        yield QUOTA_REFUSALS.family()


def _queue_depth() -> int:
    """The length of Celery's default queue in Redis; 0 in embedded mode (tasks run inline)."""
    if not settings.REDIS_URL:
        return 0
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1)
        prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")
        return cast(int, client.llen(f"{prefix}celery"))
    except (redis.RedisError, AttributeError):
        return -1  # unknown: Redis did not answer


# The collectors of the apps above diagnosis (alerts' outbox), registered in their `ready()`:
# diagnosis serves /metrics without importing them.
_COLLECTORS: list[Callable[[], Collector]] = []


def register_collector(factory: Callable[[], Collector]) -> None:
    """Adds an app's figures to /metrics: `factory()` makes a collector for each scrape."""
    if factory not in _COLLECTORS:
        _COLLECTORS.append(factory)


def metrics(request: HttpRequest) -> HttpResponse:
    registry = CollectorRegistry()
    registry.register(DatabaseCollector())
    for factory in _COLLECTORS:
        registry.register(factory())
    return HttpResponse(generate_latest(registry), content_type="text/plain; version=0.0.4")
