"""/metrics: the Prometheus text format, figures from the database, no tenant data in labels."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from diagnosis.models import Diagnosis

pytestmark = pytest.mark.django_db


def test_metrics_count_diagnoses_by_outcome_and_class_without_tenant_data(client, acme, umbrella):
    for organization in (acme, umbrella):
        Diagnosis.objects.create(
            organization=organization,
            source="api",
            size_bytes=1,
            filename="secret-project.log",
            status=Diagnosis.Status.DONE,
            outcome="diagnosed",
            failure_slug="nccl-timeout",
        )

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    (done,) = [s for s in families["rootcause_diagnoses"].samples if s.labels["status"] == "done"]
    assert done.labels == {
        "status": "done",
        "outcome": "diagnosed",
        "failure_class": "nccl-timeout",
    }
    assert done.value == 2  # across organisations: the figure names none of them
    for name in (
        "rootcause_diagnosis_seconds_avg",
        "rootcause_diagnoses_active",
        "rootcause_queue_depth",
        "rootcause_quota_refusals",
        "rootcause_webhook_deliveries",
    ):
        assert name in families
    for forbidden in ("Acme", "Umbrella", str(acme.id), "secret-project", "alice"):
        assert forbidden not in text


def test_a_quota_refusal_is_counted(api):
    from diagnosis.metrics import QUOTA_REFUSALS

    before = QUOTA_REFUSALS.value()
    for _ in range(4):  # a visitor's allowance is 3 a day
        last = api.post("/api/v1/diagnoses", "CUDA out of memory\n", content_type="text/plain")
    assert last.status_code == 429
    assert QUOTA_REFUSALS.value() == before + 1
    # Kept in Redis, so whichever web process is scraped reports it.
    text = api.get("/metrics").content.decode()
    (family,) = [
        f for f in text_string_to_metric_families(text) if f.name == "rootcause_quota_refusals"
    ]
    assert family.samples[0].value == before + 1


def _stage_counts(client) -> dict[str, float]:
    text = client.get("/metrics").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return {
        s.labels["stage"]: s.value
        for s in families["rootcause_stage_seconds"].samples
        if s.name == "rootcause_stage_seconds_count"
    }


def test_each_stage_run_is_timed_by_stage_name_only(
    client, acme_api, django_capture_on_commit_callbacks
):
    from diagnosis.pipeline.table import STAGES
    from tests.diagnosis.logs import OOM_LOG

    before = _stage_counts(client)
    assert set(before) == {stage.status for stage in STAGES}

    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post("/api/v1/diagnoses", OOM_LOG, content_type="text/plain")
    assert response.status_code == 202

    after = _stage_counts(client)
    # a log runs every stage but a bundle's analysis, once each
    ran = {stage.status for stage in STAGES if "log" in stage.kinds}
    expected = {stage: int(stage in ran) for stage in after}
    assert {stage: after[stage] - before[stage] for stage in after} == expected
    text = client.get("/metrics").content.decode()
    (histogram,) = [
        f for f in text_string_to_metric_families(text) if f.name == "rootcause_stage_seconds"
    ]
    buckets = [s for s in histogram.samples if s.name == "rootcause_stage_seconds_bucket"]
    assert {s.labels["le"] for s in buckets} >= {"0.1", "1.0", "+Inf"}
    for sample in histogram.samples:  # the stage and the bucket: nothing about the tenant
        assert set(sample.labels) <= {"stage", "le"}


def test_stage_durations_fall_in_their_buckets(settings):
    from diagnosis import metrics

    settings.REDIS_KEY_PREFIX = settings.REDIS_KEY_PREFIX + "bucket-test:"
    metrics.observe_stage("masking", 0.3)
    metrics.observe_stage("masking", 7.0)
    metrics.observe_stage("masking", 1000.0)

    figures = metrics._stage_figures("masking")
    assert figures == {"0.5": 1, "10.0": 1, "+Inf": 1, "count": 3, "sum": 1007.3}


# --- Who may read it -----------------------------------------------------------------------------

TOKEN = "m" * 40


def _scrape(address: str, **headers: str):
    environ: dict[str, Any] = {"REMOTE_ADDR": address, **headers}
    return Client().get("/metrics", **environ)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"])
def test_metrics_answer_this_machine_by_default(address):
    response = _scrape(address)
    assert response.status_code == 200
    assert b"rootcause_diagnoses" in response.content


@pytest.mark.parametrize("address", ["203.0.113.5", "10.0.0.8", "2001:db8::1"])
def test_metrics_refuse_other_addresses_by_default(address):
    response = _scrape(address)
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert b"rootcause_" not in response.content


def test_a_request_relayed_by_an_undeclared_proxy_is_not_local():
    # nginx on the same machine: REMOTE_ADDR is loopback, the client is anyone.
    response = _scrape("127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert response.status_code == 403


@override_settings(TRUSTED_PROXY_COUNT=1, METRICS_ALLOWED_NETWORKS=["10.1.0.0/16"])
def test_allowed_networks_are_matched_against_the_client_behind_our_proxies():
    assert _scrape("10.9.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3").status_code == 200
    assert _scrape("10.9.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3, 203.0.113.5").status_code == 403
    # Loopback is no longer in the list once the list is set.
    assert _scrape("127.0.0.1").status_code == 403


@override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOWED_NETWORKS=[])
def test_with_a_token_metrics_answer_its_holder_from_anywhere():
    assert _scrape("203.0.113.5", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    for headers in (
        {},
        {"HTTP_AUTHORIZATION": "Bearer " + "x" * 40},
        {"HTTP_AUTHORIZATION": TOKEN},
    ):
        refused = _scrape("127.0.0.1", **headers)
        assert refused.status_code == 401
        assert refused["WWW-Authenticate"].startswith("Bearer")
        assert b"rootcause_" not in refused.content
