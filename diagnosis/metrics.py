"""`/metrics` for operators, in the Prometheus text format: computed from the database and the
queue at scrape time, so every web process answers the same figures without a shared registry.

No label carries tenant data: statuses, outcomes, stage names and failure classes (the catalogue's
public slugs) only; never an organisation, a user, a file name or a diagnosis id. The figures still
span every organisation, so only a scraper with METRICS_TOKEN or at an address of
METRICS_ALLOWED_NETWORKS (loopback by default) reads them.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
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
from django.views.decorators.cache import never_cache
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from accounts.actors import client_address
from diagnosis.models import Diagnosis
from diagnosis.pipeline.table import active_statuses, stages
from plumbing.problems import problem_page


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


# Headers a proxy adds when it relays a request: with none of ours declared (TRUSTED_PROXY_COUNT
# = 0), REMOTE_ADDR is then the proxy's (a local one's is loopback), not the client's.
_FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def _bearer_token_matches(request: HttpRequest) -> bool:
    expected = settings.METRICS_TOKEN
    scheme, _, given = str(request.META.get("HTTP_AUTHORIZATION", "")).partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), expected.encode())


def _address_allowed(request: HttpRequest) -> bool:
    if not settings.TRUSTED_PROXY_COUNT and any(h in request.META for h in _FORWARDING_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in ipaddress.ip_network(n) for n in settings.METRICS_ALLOWED_NETWORKS)


def _refusal() -> HttpResponse:
    if settings.METRICS_TOKEN:
        response = problem_page(
            401,
            "not-authenticated",
            "Not authenticated",
            "/metrics needs `Authorization: Bearer <METRICS_TOKEN>`.",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return problem_page(
        403,
        "forbidden",
        "Forbidden",
        "/metrics answers only addresses in METRICS_ALLOWED_NETWORKS or a METRICS_TOKEN holder.",
    )


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not (_bearer_token_matches(request) or _address_allowed(request)):
        return _refusal()
    registry = CollectorRegistry()
    registry.register(DatabaseCollector())
    for factory in _COLLECTORS:
        registry.register(factory())
    return HttpResponse(generate_latest(registry), content_type="text/plain; version=0.0.4")
