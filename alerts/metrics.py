"""The alerts' figures on `/metrics` (served by diagnosis.metrics, which this registers with)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from alerts.models import WebhookDelivery


class OutboxCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        outbox = GaugeMetricFamily(
            "rootcause_webhook_deliveries", "Alert deliveries by state.", labels=["state"]
        )
        states = dict(
            WebhookDelivery.objects.values_list("state").annotate(n=Count("id")).order_by()
        )
        for state in WebhookDelivery.State:
            outbox.add_metric([state.value], states.get(state.value, 0))
        yield outbox
