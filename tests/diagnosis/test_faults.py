"""Faults in-process: Redis unavailable at intake, a staged log lost, an orphan staged log, a claim
whose outcome the worker never learnt. The same faults with real processes are in tests/e2e."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import cast

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from accounts.actors import Actor
from billing_tiers.models import QuotaCharge
from billing_tiers.selectors import quota_status
from config.wsgi import DeadlineInput
from diagnosis import services
from diagnosis.models import Diagnosis
from diagnosis.services import enqueue, submission, upkeep
from diagnosis.staging import MASKED, RAW, get_store, staging_key
from plumbing.problems import UploadTimeout
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
Status = Diagnosis.Status


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # closed again: nothing listens there


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def test_intake_answers_503_with_retry_after_and_keeps_nothing_while_redis_is_away(acme_api, acme):
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith("/service-unavailable")
    assert int(response["Retry-After"]) > 0
    assert not Diagnosis.objects.exists()
    assert not QuotaCharge.objects.exists()
    assert quota_status(Actor(organization=acme)).used == 0


def test_a_log_is_staged_with_a_short_ttl_that_becomes_the_backstop_once_its_row_commits(
    acme_api, django_capture_on_commit_callbacks, monkeypatch
):
    # The pipeline is not run here: only what intake leaves in Redis is looked at.
    monkeypatch.setattr(enqueue, "enqueue_pipeline", lambda *args: None)
    seen: list[int] = []
    original = submission.keep_and_enqueue

    def spy(diagnosis_id: uuid.UUID, raw_key: str) -> None:
        seen.append(cast(int, _client().ttl(raw_key)))  # before the row's commit takes effect
        original(diagnosis_id, raw_key)

    monkeypatch.setattr(submission, "keep_and_enqueue", spy)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    raw_key = staging_key(RAW, response.json()["id"])
    assert 0 < seen[0] <= settings.STAGING_PENDING_TTL_SECONDS
    assert cast(int, _client().ttl(raw_key)) > settings.STAGING_PENDING_TTL_SECONDS


@pytest.mark.django_db(transaction=True)  # the commit, and what follows it, within the request
def test_a_log_lost_before_its_row_committed_is_a_503_and_the_diagnosis_is_refunded(
    acme_api, acme, monkeypatch
):
    original = submission.keep_and_enqueue

    def redis_restarted_meanwhile(diagnosis_id: uuid.UUID, raw_key: str) -> None:
        _client().delete(raw_key)
        original(diagnosis_id, raw_key)

    monkeypatch.setattr(submission, "keep_and_enqueue", redis_restarted_meanwhile)
    response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 503
    assert "Retry-After" in response
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.status == Status.FAILED
    assert "lost in an outage" in diagnosis.failure_reason
    assert QuotaCharge.objects.get(reference=str(diagnosis.id)).refunded_at is not None
    assert quota_status(Actor(organization=acme)).used == 0


def test_a_diagnosis_whose_message_was_not_published_is_enqueued_by_the_next_sweep(
    acme_api, acme, django_capture_on_commit_callbacks, monkeypatch
):
    def broker_away(diagnosis_id: uuid.UUID, status: str) -> None:
        raise redis.ConnectionError("Redis went away between the commit and the publication")

    monkeypatch.setattr(enqueue, "enqueue_pipeline", broker_away)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")
    assert response.status_code == 202  # the row and the log were kept
    unpublished = response.json()["id"]
    waiting = _submitted(acme)  # its message is in the queue: not the sweeper's yet
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(upkeep, "enqueue_pipeline", lambda i, s: sent.append((str(i), s)))

    # The next round, not DIAGNOSIS_STUCK_AFTER_SECONDS later.
    assert services.requeue_stuck_diagnoses() == 1

    assert sent == [(unpublished, Status.QUEUED)]
    assert get_store(settings.REDIS_URL).exists(staging_key(RAW, unpublished))
    # Due is not held: the first worker to get the message claims it.
    claim = services.claim_stage(diagnosis_id=unpublished, stage="masking")
    assert isinstance(claim, services.Claim)
    assert Diagnosis.objects.get(id=waiting.id).lease_expires_at is None


def _messages_for(diagnosis_id: str) -> list[str]:
    """The task messages in Celery's queue naming `diagnosis_id`, taken out of it."""
    from config.celery import app

    key = f"{settings.REDIS_KEY_PREFIX}{app.conf.task_default_queue}"
    client = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    found = [raw for raw in cast(list[str], client.lrange(key, 0, -1)) if diagnosis_id in raw]
    for raw in found:
        client.lrem(key, 1, raw)
    return found


def _publish_refused(diagnosis_id: uuid.UUID, status: str) -> None:
    raise AssertionError("published apart from the log's TTL")


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_with_a_broker_the_message_goes_with_the_logs_ttl(
    acme_api, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(enqueue, "enqueue_pipeline", _publish_refused)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    diagnosis_id = response.json()["id"]
    (message,) = _messages_for(diagnosis_id)
    assert "workers.tasks.mask" in message
    ttl = cast(int, _client().ttl(staging_key(RAW, diagnosis_id)))
    assert ttl > settings.STAGING_PENDING_TTL_SECONDS


@pytest.mark.django_db(transaction=True)  # the commit, and what follows it, within the request
@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_with_a_broker_a_lost_log_sends_no_message_and_is_refunded(acme_api, acme, monkeypatch):
    original = submission.keep_and_enqueue

    def redis_restarted_meanwhile(diagnosis_id: uuid.UUID, raw_key: str) -> None:
        _client().delete(raw_key)
        original(diagnosis_id, raw_key)

    monkeypatch.setattr(submission, "keep_and_enqueue", redis_restarted_meanwhile)
    monkeypatch.setattr(enqueue, "enqueue_pipeline", _publish_refused)
    response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 503
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.status == Status.FAILED
    assert _messages_for(str(diagnosis.id)) == []
    assert quota_status(Actor(organization=acme)).used == 0


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_with_a_broker_a_message_that_cannot_be_made_is_published_apart(
    acme_api, django_capture_on_commit_callbacks, monkeypatch
):
    def broker_away(name: str, args: tuple[str, ...]) -> None:
        raise redis.ConnectionError("Redis went away as the message was made")

    monkeypatch.setattr(enqueue.task_publisher, "message_for", broker_away)
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(enqueue, "enqueue_pipeline", lambda i, s: sent.append((str(i), s)))
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    diagnosis_id = response.json()["id"]
    assert sent == [(diagnosis_id, Status.QUEUED)]
    ttl = cast(int, _client().ttl(staging_key(RAW, diagnosis_id)))
    assert ttl > settings.STAGING_PENDING_TTL_SECONDS


def _submitted(acme, *, status: str = Status.QUEUED) -> Diagnosis:
    """A committed diagnosis with its raw log staged and its unit charged, as intake leaves it."""
    from billing_tiers.services import charge_quota

    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=3)
    charge_quota(actor=Actor(organization=acme), reference=diagnosis.id)
    get_store(settings.REDIS_URL).write(staging_key(RAW, diagnosis.id), [b"log"], ttl_seconds=60)
    Diagnosis.objects.filter(id=diagnosis.id).update(status=status)
    return diagnosis


@override_settings(TIER_DAILY_DIAGNOSES={**settings.TIER_DAILY_DIAGNOSES, "free": 100})
def test_the_sweeper_fails_and_refunds_diagnoses_whose_staged_log_was_lost(acme):
    lost = _submitted(acme)
    lost_while_masking = _submitted(acme, status="masking")
    kept = _submitted(acme)
    matching = _submitted(acme, status="matching")
    get_store(settings.REDIS_URL).write(
        staging_key(MASKED, matching.id), [b"masked"], ttl_seconds=60
    )
    remediating = _submitted(acme, status="remediating")  # needs nothing from Redis
    _client().delete(*(staging_key(RAW, d.id) for d in (lost, lost_while_masking, remediating)))

    sweep = services.sweep_staging()

    assert sweep.lost == 2
    for diagnosis in (lost, lost_while_masking):
        diagnosis.refresh_from_db()
        assert diagnosis.status == Status.FAILED
        assert "lost in an outage" in diagnosis.failure_reason
        assert "submit it again" in diagnosis.failure_reason
        assert QuotaCharge.objects.get(reference=str(diagnosis.id)).refunded_at is not None
    for diagnosis in (kept, matching, remediating):
        diagnosis.refresh_from_db()
        assert diagnosis.status != Status.FAILED
    assert quota_status(Actor(organization=acme)).used == 3
    assert services.sweep_staging().lost == 0  # refunded once


def test_the_sweeper_deletes_staged_logs_no_row_names_once_idle(acme):
    named = _submitted(acme)
    store = get_store(settings.REDIS_URL)
    orphan = staging_key(RAW, uuid.uuid4())  # a web process killed mid-upload
    store.write(orphan, [b"secret raw bytes"], ttl_seconds=60)
    finished = _submitted(acme, status=Status.DONE)

    with override_settings(STAGING_ORPHAN_IDLE_SECONDS=3600):
        assert services.sweep_staging().orphans == 0  # maybe an upload still in progress
    assert store.exists(orphan)
    time.sleep(1.1)  # OBJECT IDLETIME counts whole seconds
    with override_settings(STAGING_ORPHAN_IDLE_SECONDS=1):
        sweep = services.sweep_staging()

    assert sweep.orphans == 2
    assert not store.exists(orphan)
    assert not store.exists(staging_key(RAW, finished.id))
    assert store.exists(staging_key(RAW, named.id))


def test_a_claim_whose_outcome_was_lost_is_recognised_by_its_retry(acme):
    diagnosis = _submitted(acme)
    task_id = uuid.uuid4()  # a Celery task keeps its id across retries
    first = services.claim_stage(diagnosis_id=str(diagnosis.id), stage="masking", token=task_id)
    assert isinstance(first, services.Claim)
    # The UPDATE committed but the worker never learnt it (the connection broke): it retries.

    duplicate = services.claim_stage(diagnosis_id=str(diagnosis.id), stage="masking", token=task_id)
    retry = services.claim_stage(
        diagnosis_id=str(diagnosis.id), stage="masking", token=task_id, resume=True
    )
    another = services.claim_stage(diagnosis_id=str(diagnosis.id), stage="masking")

    # A redelivered copy of a message may still be running: it waits; the retry resumes.
    assert isinstance(duplicate, services.Busy)
    assert isinstance(retry, services.Claim)
    assert retry.token == task_id
    assert isinstance(another, services.Busy)  # anyone else still waits for the lease
    assert services.complete_stage(retry)


def test_an_upload_that_stalls_fails_with_upload_timeout() -> None:
    server, client = socket.socketpair()
    with server, client:
        client.sendall(b"first bytes")
        # The worker (plumbing/serving.py) sets the socket's timeout before each recv.
        server.settimeout(0.2)
        stream = DeadlineInput(server.makefile("rb"), time.monotonic() + 60)
        assert stream.read(11) == b"first bytes"
        with pytest.raises(UploadTimeout):
            stream.read(11)  # nothing more comes


def test_an_upload_trickling_past_its_deadline_fails_with_upload_timeout() -> None:
    server, client = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            client.sendall(b"x")
            time.sleep(0.05)

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        stream = DeadlineInput(server.makefile("rb"), time.monotonic() + 0.5)

        def read_until_done() -> None:
            while stream.read(1):  # never idle, but late
                pass

        with pytest.raises(UploadTimeout):
            read_until_done()
    finally:
        stop.set()
        sender.join()
        server.close()
        client.close()


def test_beat_is_healthy_only_while_the_staging_sweep_keeps_running() -> None:
    from django.core.cache import cache
    from django.core.management import CommandError, call_command

    from workers.tasks import sweep_staging

    cache.delete(services.SWEEP_HEARTBEAT)
    with pytest.raises(CommandError, match="never"):
        call_command("check_beat")

    sweep_staging.delay()  # eager here; beat sends it to a worker in real mode
    call_command("check_beat")

    cache.set(services.SWEEP_HEARTBEAT, time.time() - 3600)
    with pytest.raises(CommandError, match="3600 s ago"):
        call_command("check_beat")


def test_an_outage_outside_a_view_is_a_503_too(rf) -> None:
    from django.db import OperationalError

    from plumbing.problems import OutageMiddleware, server_error

    for path, content_type in (("/api/v1/me", "application/problem+json"), ("/", "text/html")):
        request = rf.get(path)
        try:
            raise OperationalError("connection refused")
        except OperationalError:
            response = server_error(request)  # handler500, inside Django's except block
        assert response.status_code == 503, path
        assert response["Content-Type"].startswith(content_type), path
        assert int(response["Retry-After"]) > 0

    page = OutageMiddleware(lambda request: None).process_exception(
        rf.get("/diagnoses/"), redis.ConnectionError("gone")
    )
    assert page is not None
    assert page.status_code == 503
    assert (
        OutageMiddleware(lambda request: None).process_exception(rf.get("/"), ValueError("a bug"))
        is None
    )  # a bug of ours stays a 500
