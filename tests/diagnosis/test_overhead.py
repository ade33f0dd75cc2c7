"""Per-diagnosis overhead that `make loadtest` found, and the guarantees that cutting it keeps.

Work a submission or a stage repeated for nothing is counted here by what it does (queries, claims,
messages), never by how long it takes: timings live in `make loadtest` and `make bench`.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from diagnosis import services
from diagnosis.models import Diagnosis
from diagnosis.stages import STAGES
from diagnosis.staging import MASKED, RAW, get_store, staging_key
from tests.diagnosis.logs import OOM_LOG
from workers.tasks import STAGE_TASKS

Status = Diagnosis.Status

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _touching(queries: CaptureQueriesContext, table: str) -> int:
    # The ORM quotes table names; the hot path's own statements (config/sql.py) do not.
    name = re.compile(rf'\b"?{table}"?\b')
    return sum(bool(name.search(query["sql"])) for query in queries.captured_queries)


def test_a_submission_works_out_the_tier_once(acme_api: Any) -> None:
    # The tier takes queries (the organisation's domains, its managers' e-mails): the quota check,
    # the charge and the answer's quota headers share one look.
    with CaptureQueriesContext(connection) as queries:
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    assert _touching(queries, "accounts_domain") == 1
    # ...and the headers still tell the quota as it is after the charge.
    assert response["RateLimit-Limit"] == "3"
    assert response["RateLimit-Remaining"] == "2"
    assert Diagnosis.objects.count() == 1


def test_a_submission_charges_in_one_statement_and_reads_the_quota_once(
    acme_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The charge takes the unit and returns the new count in one statement (no savepoint, no
    # second read for the answer's headers); the two burst limits are read in one Redis round
    # trip and written in one.
    commands: list[str] = []
    execute = redis.Redis.execute_command

    def counted(self: redis.Redis, *args: Any, **options: Any) -> Any:
        commands.append(str(args[0]).upper())
        return execute(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counted)
    acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")  # the day's row exists
    # As in production: the pipeline is a message for a worker, not run within the request (the
    # embedded mode reads the row back for its answer, since the pipeline ran as it committed).
    commands.clear()
    with (
        override_settings(CELERY_TASK_ALWAYS_EAGER=False),
        CaptureQueriesContext(connection) as queries,
    ):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    assert response.status_code == 202
    assert response["RateLimit-Remaining"] == "1"
    sql = [query["sql"] for query in queries.captured_queries]
    # One read before staging (an upload over quota is never staged), none after the charge.
    assert sum(s.startswith("SELECT") and "billing_tiers_quotausage" in s for s in sql) == 1
    assert sum('"billing_tiers_quotausage"' in s and "RETURNING" in s for s in sql) == 1
    assert not any(s.startswith('UPDATE "billing_tiers_quotausage"') for s in sql)
    # The test's own transaction is one savepoint; the charge adds none.
    assert sum(s.startswith("SAVEPOINT") for s in sql) == 1
    # The token with its organisation; the tier (domains and verified managers, one
    # statement); the quota; the masking rules; the test's savepoint; the charge (two
    # statements); the row; its release. The row is not read back: the answer is the row as
    # written.
    assert len(sql) <= 9, "\n".join(s[:90] for s in sql)
    assert response.json()["status"] == "queued"
    # The address' failed tokens and both burst limits: one MGET, no GET of its own for each.
    assert commands.count("GET") == 0
    assert commands.count("MGET") == 1


# --- The worker: one message runs every stage, each still claimed on its own ------------------


@pytest.fixture
def queued(acme: Any) -> Diagnosis:
    return Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)


def _claim(diagnosis: Diagnosis, stage: str) -> services.Claim:
    claim = services.claim_stage(diagnosis_id=str(diagnosis.id), stage=stage)
    assert isinstance(claim, services.Claim)
    return claim


def test_completing_a_stage_claims_the_next_under_the_same_lease(queued: Diagnosis) -> None:
    claim = dataclasses.replace(_claim(queued, Status.MASKING), then=uuid.uuid4())

    assert services.complete_stage(claim, fields={"masking_counts": {"EMAIL_ADDRESS": 1}})

    queued.refresh_from_db()
    assert queued.status == Status.MATCHING
    assert queued.progress == 40
    assert queued.masking_counts == {"EMAIL_ADDRESS": 1}
    assert queued.lease_token == claim.then
    assert queued.lease_expires_at is not None
    assert queued.lease_expires_at > timezone.now()
    assert queued.attempts == 2  # a claim of each stage, as two separate claims would count
    following = services.handed_on(claim)
    assert following is not None
    assert following.token == claim.then
    assert following.diagnosis.status == Status.MATCHING
    # The next stage is held: another worker is told to wait, as for any claim.
    assert isinstance(
        services.claim_stage(diagnosis_id=str(queued.id), stage=Status.MATCHING), services.Busy
    )
    # The lease of the stage that completed is gone with it.
    assert services.complete_stage(claim) is False


def test_a_completion_without_then_leaves_the_next_stage_to_be_claimed(queued: Diagnosis) -> None:
    claim = _claim(queued, Status.MASKING)

    assert services.complete_stage(claim)

    assert services.handed_on(claim) is None
    queued.refresh_from_db()
    assert (queued.status, queued.lease_token) == (Status.MATCHING, None)


@override_settings(DIAGNOSIS_MAX_ATTEMPTS=1)
def test_past_the_attempts_cap_the_next_stage_is_not_claimed_and_claim_stage_gives_up(
    queued: Diagnosis,
) -> None:
    Diagnosis.objects.filter(pk=queued.pk).update(attempts=len(STAGES) - 1)
    claim = dataclasses.replace(_claim(queued, Status.MASKING), then=uuid.uuid4())

    assert services.complete_stage(claim)  # the stage's own work is kept

    assert services.handed_on(claim) is None
    queued.refresh_from_db()
    assert (queued.status, queued.lease_token) == (Status.MATCHING, None)
    assert services.claim_stage(diagnosis_id=str(queued.id), stage=Status.MATCHING) is None
    queued.refresh_from_db()
    assert queued.status == Status.FAILED
    assert queued.failure_reason == "gave up after repeated worker failures"


def test_one_message_takes_a_diagnosis_through_every_stage(
    acme_api: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims: list[str] = []
    claim_stage = services.claim_stage

    def counted(**kwargs: Any) -> Any:
        claims.append(kwargs["stage"])
        return claim_stage(**kwargs)

    monkeypatch.setattr(services, "claim_stage", counted)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    diagnosis = Diagnosis.objects.get(pk=response.json()["id"])
    assert diagnosis.status == Status.DONE
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert diagnosis.attempts == len(STAGES)
    # Only the first stage is claimed by a claim of its own; each later one comes with the
    # completion of the one before.
    assert claims == [Status.MASKING]
    assert not get_store(settings.REDIS_URL).exists(staging_key(RAW, diagnosis.id))
    assert not get_store(settings.REDIS_URL).exists(staging_key(MASKED, diagnosis.id))


def test_a_message_redelivered_after_its_worker_died_resumes_at_the_stage_it_died_in(
    queued: Diagnosis,
) -> None:
    # The worker completed masking (the raw log is gone, the masked text staged), claimed
    # matching with the same message, and was killed; its lease has run out since.
    masked = OOM_LOG.replace("janedoe", "<USER_1>").encode()
    get_store(settings.REDIS_URL).write(staging_key(MASKED, queued.id), [masked], ttl_seconds=60)
    Diagnosis.objects.filter(pk=queued.pk).update(
        status=Status.MATCHING,
        progress=40,
        masking_counts={"USERNAME": 1},
        attempts=2,
        lease_token=uuid.uuid4(),
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )

    # The message is the first stage's: it must not mask again (the raw log is gone) but go on.
    STAGE_TASKS[Status.MASKING].apply(args=(str(queued.id),))

    queued.refresh_from_db()
    assert queued.status == Status.DONE
    assert queued.failure_slug == "optimizer-state-oom"
    assert queued.masking_counts == {"USERNAME": 1}
    assert queued.attempts == 4


def test_a_duplicate_message_of_a_finished_diagnosis_does_nothing(queued: Diagnosis) -> None:
    Diagnosis.objects.filter(pk=queued.pk).update(status=Status.DONE, progress=100)

    STAGE_TASKS[Status.MASKING].apply(args=(str(queued.id),))

    queued.refresh_from_db()
    assert (queued.status, queued.attempts) == (Status.DONE, 0)


def test_the_pipeline_of_an_organisations_diagnosis_does_not_work_out_its_tier(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Every tier an organisation can be on includes fix steps: no look at its domains or managers.
    with django_capture_on_commit_callbacks(execute=False):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")
    diagnosis_id = response.json()["id"]

    with CaptureQueriesContext(connection) as queries:
        STAGE_TASKS[Status.MASKING].apply(args=(diagnosis_id,))

    diagnosis = Diagnosis.objects.get(pk=diagnosis_id)
    assert diagnosis.status == Status.DONE
    assert diagnosis.result["remediation"]["steps"]
    assert _touching(queries, "accounts_domain") == 0
    assert _touching(queries, "auth_user") == 0
    # The organisation comes with the claimed row, not in a query of its own.
    assert not any(
        query["sql"].startswith('SELECT "accounts_organization"')
        for query in queries.captured_queries
    )
