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
from diagnosis.pipeline.stage import Kind
from diagnosis.pipeline.table import stages_for
from diagnosis.services import lifecycle
from diagnosis.staging import MASKED, RAW, get_store, staging_key
from tests.diagnosis.logs import OOM_LOG
from tests.manage_command import manage
from tests.redis_trips import redis_round_trips
from workers.tasks import STAGE_TASKS

Status = Diagnosis.Status

pytestmark = pytest.mark.django_db

# The stages a log goes through (a bundle's analysis stage is not among them).
LOG_STAGES = stages_for(Kind.LOG)
URL = "/api/v1/diagnoses"


def _touching(queries: CaptureQueriesContext, table: str) -> int:
    # The ORM quotes table names; the hot path's own statements (plumbing/sql.py) do not.
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
    # The charge takes the unit, records itself and the row and returns the new count in one
    # statement (no transaction of its own, no second read for the answer's headers); the two
    # burst limits are counted in one Redis round trip.
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
    assert not any(s.startswith('UPDATE "billing_tiers_quotausage"') for s in sql)
    # The unit, its charge and the row in one statement (data-modifying CTEs), in no
    # transaction of the submission's own: no savepoint within the test's transaction.
    (charge,) = [s for s in sql if '"billing_tiers_quotausage"' in s and "RETURNING" in s]
    assert charge.startswith("WITH unit AS (INSERT INTO")
    assert 'INSERT INTO "billing_tiers_quotacharge"' in charge
    assert 'INSERT INTO "diagnosis_diagnosis"' in charge
    assert not any(
        "billing_tiers_quotacharge" in s or "diagnosis_diagnosis" in s
        for s in sql
        if s is not charge
    )
    assert not any(s.startswith("SAVEPOINT") for s in sql)
    # The token with its organisation, the tier's facts (domains and verified managers), the
    # masking rules and the quota's use in one statement; the charge with the row. The row is
    # not read back: the answer is the row as written.
    assert len(sql) == 2, "\n".join(s[:90] for s in sql)
    assert "accounts_apitoken" in sql[0]
    assert "accounts_maskingrule" in sql[0]
    assert response.json()["status"] == "queued"
    # The address' failed tokens, both burst limits and the upload's slots of concurrent
    # uploads (plumbing/concurrency.py): one script (plumbing/ratelimit.py), no read and write
    # of each log.
    assert commands.count("EVALSHA") == 1
    assert not {"GET", "MGET"} & set(commands)


# --- The worker: one message runs every stage, each still claimed on its own ------------------


@pytest.fixture
def queued(acme: Any) -> Diagnosis:
    return Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)


def _claim(diagnosis: Diagnosis, stage: str) -> services.Claim:
    claim = services.claim_stage(diagnosis_id=str(diagnosis.id), stage=stage)
    assert isinstance(claim, services.Claim)
    return claim


def test_a_claim_reads_the_masking_rules_and_the_catalogue_version_as_their_own_reads_do(
    acme: Any, alice: Any, queued: Diagnosis
) -> None:
    from accounts.actors import actor_for_person
    from accounts.selectors import masking_rules_of
    from accounts.services import add_masking_rule
    from encyclopedia.selectors import current_version

    actor = actor_for_person(alice)
    for kind, value in [("term", "bluebird"), ("pattern", r"OPS-\d{5}"), ("term", "nightjar")]:
        add_masking_rule(actor=actor, kind=kind, value=value, label="project")
    visitors = Diagnosis.objects.create(
        organization=None,
        source="web",
        size_bytes=10,
        expires_at=timezone.now() + timedelta(hours=1),
        anonymous_subject="visitor",
        access_key_digest="digest",
    )

    claim = _claim(queued, "masking")
    handing = dataclasses.replace(claim, then=uuid.uuid4())
    assert services.complete_stage(handing)
    following = services.handed_on(handing)

    assert claim.read.masking_rules == masking_rules_of(acme.pk)
    assert [rule.value for rule in claim.read.masking_rules] == [
        "bluebird",
        r"OPS-\d{5}",
        "nightjar",
    ]
    assert claim.read.catalogue_version == current_version()
    assert _claim(visitors, "masking").read.masking_rules == []
    # The next stage, handed on with the completion, keeps what the first claim read.
    assert following is not None
    assert following.read == claim.read


def test_completing_a_stage_claims_the_next_under_the_same_lease(queued: Diagnosis) -> None:
    claim = dataclasses.replace(_claim(queued, "masking"), then=uuid.uuid4())

    assert services.complete_stage(claim, fields={"masking_counts": {"EMAIL_ADDRESS": 1}})

    queued.refresh_from_db()
    assert queued.status == "matching"
    assert queued.progress == 40
    assert queued.masking_counts == {"EMAIL_ADDRESS": 1}
    assert queued.lease_token == claim.then
    assert queued.lease_expires_at is not None
    assert queued.lease_expires_at > timezone.now()
    assert queued.attempts == 2  # a claim of each stage, as two separate claims would count
    following = services.handed_on(claim)
    assert following is not None
    assert following.token == claim.then
    assert following.diagnosis.status == "matching"
    # The next stage is held: another worker is told to wait, as for any claim.
    assert isinstance(
        services.claim_stage(diagnosis_id=str(queued.id), stage="matching"), services.Busy
    )
    # The lease of the stage that completed is gone with it.
    assert services.complete_stage(claim) is False


def test_a_completion_without_then_leaves_the_next_stage_to_be_claimed(queued: Diagnosis) -> None:
    claim = _claim(queued, "masking")

    assert services.complete_stage(claim)

    assert services.handed_on(claim) is None
    queued.refresh_from_db()
    assert (queued.status, queued.lease_token) == ("matching", None)


@override_settings(DIAGNOSIS_MAX_ATTEMPTS=1)
def test_past_the_attempts_cap_the_next_stage_is_not_claimed_and_claim_stage_gives_up(
    queued: Diagnosis,
) -> None:
    Diagnosis.objects.filter(pk=queued.pk).update(attempts=len(LOG_STAGES) - 1)
    claim = dataclasses.replace(_claim(queued, "masking"), then=uuid.uuid4())

    assert services.complete_stage(claim)  # the stage's own work is kept

    assert services.handed_on(claim) is None
    queued.refresh_from_db()
    assert (queued.status, queued.lease_token) == ("matching", None)
    assert services.claim_stage(diagnosis_id=str(queued.id), stage="matching") is None
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

    monkeypatch.setattr(lifecycle, "claim_stage", counted)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    diagnosis = Diagnosis.objects.get(pk=response.json()["id"])
    assert diagnosis.status == Status.DONE
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert diagnosis.attempts == len(LOG_STAGES)
    # Only the first stage is claimed by a claim of its own; each later one comes with the
    # completion of the one before.
    assert claims == ["masking"]
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
        status="matching",
        progress=40,
        masking_counts={"USERNAME": 1},
        attempts=2,
        lease_token=uuid.uuid4(),
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )

    # The message is the first stage's: it must not mask again (the raw log is gone) but go on.
    STAGE_TASKS["masking"].apply(args=(str(queued.id),))

    queued.refresh_from_db()
    assert queued.status == Status.DONE
    assert queued.failure_slug == "optimizer-state-oom"
    assert queued.masking_counts == {"USERNAME": 1}
    assert queued.attempts == 4


def test_a_duplicate_message_of_a_finished_diagnosis_does_nothing(queued: Diagnosis) -> None:
    Diagnosis.objects.filter(pk=queued.pk).update(status=Status.DONE, progress=100)

    STAGE_TASKS["masking"].apply(args=(str(queued.id),))

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
        STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

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


# --- The worker's statements and round trips per diagnosis ---------------------------------------


def _submitted(client: Any, capture: Any, log: str = OOM_LOG) -> str:
    """A diagnosis submitted and left queued: its pipeline has not run."""
    with capture(execute=False):
        response = client.post(URL, data=log.encode(), content_type="text/plain")
    assert response.status_code == 202, response.content
    return str(response.json()["id"])


def test_the_pipeline_reads_its_row_once_and_the_catalogue_version_once(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from encyclopedia.selectors import current_engine

    diagnosis_id = _submitted(acme_api, django_capture_on_commit_callbacks)
    # A worker compiles the engine once per catalogue version (reading the catalogue then); run
    # alone, this test would otherwise count that first compilation's reads.
    current_engine()

    with CaptureQueriesContext(connection) as queries:
        STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

    assert Diagnosis.objects.get(pk=diagnosis_id).status == Status.DONE
    sql = [query["sql"] for query in queries.captured_queries]
    # The claim reads the row (with its organisation) in its own UPDATE; the later stages take
    # what the stage before them computed in memory, and the alerts do not read it again.
    assert sum(s.startswith('WITH changed AS (UPDATE "diagnosis_diagnosis"') for s in sql) == 1
    assert not any(s.startswith("SELECT") and "diagnosis_diagnosis" in s for s in sql)
    # The three completions.
    assert sum(s.startswith('UPDATE "diagnosis_diagnosis"') for s in sql) == 3
    # Which catalogue is current and the organisation's masking rules are read in the claim's
    # statement (lifecycle.ReadWithClaim), not each in a statement of its own when the match and
    # mask stages start; remediation uses the engine that matched.
    (claim,) = [s for s in sql if s.startswith("WITH changed AS")]
    assert _touching(queries, "encyclopedia_catalogueversion") == 1
    assert "encyclopedia_catalogueversion" in claim
    assert _touching(queries, "accounts_maskingrule") == 1
    assert "accounts_maskingrule" in claim
    # An organisation without webhooks or e-mail alerts: the UPDATE that marks it done says so
    # (the alerts' idle condition in its WHERE), with no transaction around it and no lookup of
    # its own: four statements in all, down from twelve.
    (done,) = [s for s in sql if "diagnosis_webhook" in s]
    assert done.startswith('UPDATE "diagnosis_diagnosis"')
    assert len(sql) == 4


def test_the_alerts_of_a_diagnosis_cost_no_query_for_a_visitor_and_one_without_endpoints(
    acme: Any,
) -> None:
    from alerts import services as alerts

    with CaptureQueriesContext(connection) as queries:
        assert alerts.enqueue_alerts(uuid.uuid4(), organization_id=None) == 0
    assert len(queries.captured_queries) == 0

    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=1)
    with CaptureQueriesContext(connection) as queries:
        assert alerts.enqueue_alerts(diagnosis.id, organization_id=acme.id) == 0
    assert len(queries.captured_queries) == 1


def test_the_stage_durations_of_a_diagnosis_go_to_redis_in_one_round_trip(
    acme_api: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from diagnosis import metrics

    diagnosis_id = _submitted(acme_api, django_capture_on_commit_callbacks)
    before = {s.status: metrics._stage_figures(s.status).get("count", 0) for s in LOG_STAGES}
    trips = redis_round_trips(monkeypatch)

    STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

    assert Diagnosis.objects.get(pk=diagnosis_id).status == Status.DONE
    (recorded,) = [trip for trip in trips if "HINCRBY" in trip]
    assert recorded == ["HINCRBY", "HINCRBY", "HINCRBYFLOAT"] * len(LOG_STAGES)
    after = {s.status: metrics._stage_figures(s.status).get("count", 0) for s in LOG_STAGES}
    assert all(after[stage] == before[stage] + 1 for stage in before)


def test_a_message_redelivered_at_remediation_reads_the_match_from_the_row_and_stores_the_same(
    acme_api: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first worker matched, carried the result on in memory to remediation, and lost its
    # lease there (taken over, or killed before its completion committed): what it would have
    # stored is kept here, not written.
    diagnosis_id = _submitted(acme_api, django_capture_on_commit_callbacks)
    complete_stage = services.complete_stage
    would_have_stored: list[dict[str, Any]] = []

    def lost_at_remediation(claim: services.Claim, **kwargs: Any) -> bool:
        if claim.diagnosis.status == "remediating" and not would_have_stored:
            would_have_stored.append(kwargs["fields"]["result"])
            return False
        return complete_stage(claim, **kwargs)

    monkeypatch.setattr(lifecycle, "complete_stage", lost_at_remediation)
    STAGE_TASKS["masking"].apply(args=(diagnosis_id,))
    diagnosis = Diagnosis.objects.get(pk=diagnosis_id)
    assert diagnosis.status == "remediating"
    assert would_have_stored

    # Its lease runs out; the message comes again and resumes at remediation, from the row.
    Diagnosis.objects.filter(pk=diagnosis_id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    with CaptureQueriesContext(connection) as queries:
        STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

    diagnosis.refresh_from_db()
    assert diagnosis.status == Status.DONE
    assert diagnosis.result["remediation"]["steps"]
    # The stored match, parsed from the row, and the catalogue as it is now (read by the claim's
    # statement: each stage tried in turn is one, and nothing else reads it): the same result as
    # the one carried in memory.
    sql = [query["sql"] for query in queries.captured_queries]
    versions = [s for s in sql if "encyclopedia_catalogueversion" in s]
    assert versions
    assert all(s.startswith("WITH changed AS (UPDATE") for s in versions)
    assert diagnosis.result == would_have_stored[0]


def test_an_admin_edit_of_the_catalogue_reaches_the_next_diagnosis(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from encyclopedia import selectors as catalogue
    from encyclopedia.models import Entry
    from encyclopedia.services import update_entry

    first = Diagnosis.objects.get(pk=_submitted(acme_api, django_capture_on_commit_callbacks))
    STAGE_TASKS["masking"].apply(args=(str(first.id),))
    first.refresh_from_db()
    assert first.catalogue_version == catalogue.current_version()

    entry = Entry.objects.get(slug="optimizer-state-oom")
    data = dict(entry.data)
    data["fix"] = {**data["fix"], "steps": ["Edited by an admin just now.", *data["fix"]["steps"]]}
    update_entry(entry=entry, data=data)
    assert catalogue.current_version() != first.catalogue_version

    # The worker's engine was compiled for the old catalogue; the next diagnosis uses the new one.
    second = Diagnosis.objects.get(pk=_submitted(acme_api, django_capture_on_commit_callbacks))
    STAGE_TASKS["masking"].apply(args=(str(second.id),))
    second.refresh_from_db()
    assert second.status == Status.DONE
    assert second.catalogue_version == catalogue.current_version()
    assert second.result["catalogue_version"] == second.catalogue_version
    assert second.result["remediation"]["steps"][0] == "Edited by an admin just now."
    assert first.result["remediation"]["steps"][0] != "Edited by an admin just now."


# The claims and completions are SQL of their own (lifecycle._update_diagnosis): the embedded mode
# runs them on SQLite, where the suite's PostgreSQL does not look.
EMBEDDED_PIPELINE = """
import dataclasses, uuid
from datetime import timedelta
from django.core.management import call_command
from django.utils import timezone
from accounts.models import Organization
from diagnosis import services
from diagnosis.services import lifecycle
from diagnosis.models import Diagnosis
from diagnosis.staging import RAW, get_store, staging_key
from workers.tasks import STAGE_TASKS
call_command("load_catalogue", verbosity=0)
Status = Diagnosis.Status
org = Organization.objects.create(name="embedded")
done = Diagnosis.objects.create(organization=org, source="api", size_bytes=10)
get_store(None).write(staging_key(RAW, done.id), [LOG], ttl_seconds=60)
STAGE_TASKS["masking"].apply(args=(str(done.id),), task_id=str(uuid.uuid4()))
done.refresh_from_db()
print("pipeline", done.status, done.attempts, done.progress, done.failure_slug)
held = Diagnosis.objects.create(organization=org, source="api", size_bytes=10)
old = services.claim_stage(diagnosis_id=str(held.id), stage="masking")
Diagnosis.objects.filter(pk=held.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
new = services.claim_stage(diagnosis_id=str(held.id), stage="masking")
busy = services.claim_stage(diagnosis_id=str(held.id), stage="masking")
mine = services.claim_stage(
    diagnosis_id=str(held.id), stage="masking", token=new.token, resume=True
)
print("claims", *(type(c).__name__ for c in (old, new, busy, mine)))
print("completions", services.complete_stage(old), services.complete_stage(
    dataclasses.replace(mine, then=uuid.uuid4())
))
held.refresh_from_db()
print("handed on", held.status, held.attempts, held.lease_expires_at > timezone.now())
orm = Diagnosis.objects.select_related("organization").get(pk=done.pk)
read = lifecycle._diagnosis_with_organization(str(done.pk))
same = all(
    getattr(read, f.attname) == getattr(orm, f.attname)
    and type(getattr(read, f.attname)) is type(getattr(orm, f.attname))
    for f in Diagnosis._meta.concrete_fields
)
print("read as the ORM reads it", same, read.organization.name)
"""


@pytest.mark.slow
def test_the_stage_claims_and_completions_work_on_the_embedded_sqlite(embedded_sqlite: str) -> None:
    script = f"LOG = {OOM_LOG.encode()!r}\n{EMBEDDED_PIPELINE}"
    result = manage("shell", "-c", script, timeout=240, DATABASE_URL=embedded_sqlite)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "pipeline done 3 100 optimizer-state-oom" in lines
    assert "claims Claim Claim Busy Claim" in lines
    assert "completions False True" in lines  # the taken-over lease cannot complete
    assert "handed on matching 4 True" in lines
    assert "read as the ORM reads it True embedded" in lines


def _masked_as_written(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The masked text each mask stage writes to the staging store, from now on."""
    from diagnosis.staging import RedisStagingStore

    written: list[bytes] = []
    write = RedisStagingStore.write

    def spied(self: RedisStagingStore, key: str, chunks: Any, *, ttl_seconds: int) -> int:
        if key.startswith(staging_key(MASKED, "")):
            chunks = list(chunks)
            written.append(b"".join(chunks))
        return write(self, key, chunks, ttl_seconds=ttl_seconds)

    monkeypatch.setattr(RedisStagingStore, "write", spied)
    return written


def _masked_directly(diagnosis_id: str, log: str) -> bytes:
    """The log masked in one go, as the library masks it, with the diagnosis's secret."""
    from rootcause.masking import Masker, mask_log
    from rootcause.masking.recognizer import shared_analyzer

    masker = Masker(
        secret=services.masking_secret(diagnosis_id),
        analyzer=shared_analyzer(settings.MASKING_RECOGNIZERS_FILE or None),
        rules=[],
    )
    return "".join(mask_log(lambda: [log.encode()], masker)).encode()


def test_a_small_log_is_read_from_redis_once_and_its_masked_text_is_matched_from_memory(
    acme_api: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    diagnosis_id = _submitted(acme_api, django_capture_on_commit_callbacks)
    written = _masked_as_written(monkeypatch)
    trips = redis_round_trips(monkeypatch)

    STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

    diagnosis = Diagnosis.objects.get(pk=diagnosis_id)
    assert (diagnosis.status, diagnosis.failure_slug) == (Status.DONE, "optimizer-state-oom")
    # Both masking passes from one read, whether the log is there and its only chunk in one
    # round trip; the match from the masked text the task wrote.
    assert [trip for trip in trips if trip[0] in ("EXISTS", "GETRANGE")] == [["EXISTS", "GETRANGE"]]
    # The rest: the masked text's write (one SET with its TTL), the raw log's and the masked
    # text's deletion, and the stage durations.
    assert len(trips) == 5, trips
    assert written == [_masked_directly(diagnosis_id, OOM_LOG)]
    assert not get_store(settings.REDIS_URL).exists(staging_key(RAW, diagnosis_id))
    assert not get_store(settings.REDIS_URL).exists(staging_key(MASKED, diagnosis_id))


def test_a_log_bigger_than_a_read_chunk_is_streamed_from_redis_and_masked_the_same(
    acme_api: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools

    from diagnosis.pipeline import runners
    from diagnosis.staging import RedisStagingStore

    # A read chunk of 4 KiB stands in for READ_CHUNK (1 MiB) and a log of some 20 KiB for a big
    # one, whose user and host names come last.
    chunk = 4096
    monkeypatch.setattr(
        RedisStagingStore, "read", functools.partialmethod(RedisStagingStore.read, chunk_size=chunk)
    )
    monkeypatch.setattr(runners, "READ_CHUNK", chunk)
    log = "".join(f"step {i} loss {2.5 - i / 1000:.4f} lr 1.0e-05\n" for i in range(600)) + OOM_LOG
    assert len(log.encode()) > 4 * chunk
    diagnosis_id = _submitted(acme_api, django_capture_on_commit_callbacks, log)
    written = _masked_as_written(monkeypatch)
    trips = redis_round_trips(monkeypatch)

    STAGE_TASKS["masking"].apply(args=(diagnosis_id,))

    diagnosis = Diagnosis.objects.get(pk=diagnosis_id)
    assert (diagnosis.status, diagnosis.failure_slug) == (Status.DONE, "optimizer-state-oom")
    assert written == [_masked_directly(diagnosis_id, log)]
    # Two passes over the raw log and one over the masked text, each a chunk at a time.
    reads = sum(trip.count("GETRANGE") for trip in trips)
    assert reads >= 3 * len(log.encode()) // chunk


def test_a_claim_reads_the_row_and_its_organisation_as_the_orm_would(acme: Any) -> None:
    from accounts.models import Organization

    diagnoses = [
        Diagnosis.objects.create(
            organization=acme,
            source="api",
            size_bytes=10,
            status="remediating",
            lease_token=uuid.uuid4(),
            lease_expires_at=timezone.now(),
            result={"outcome": "diagnosed", "failure": {"slug": "x", "confidence": 0.93}},
            masking_counts={"EMAIL_ADDRESS": 2},
            labels=["a", "b"],
        ),
        Diagnosis.objects.create(  # a visitor's: no organisation
            source="web",
            size_bytes=10,
            anonymous_subject="s" * 64,
            access_key_digest="d" * 64,
            expires_at=timezone.now() + timedelta(hours=1),
        ),
    ]
    for diagnosis in diagnoses:
        expected = Diagnosis.objects.select_related("organization").get(pk=diagnosis.pk)

        with CaptureQueriesContext(connection) as queries:
            row = lifecycle._diagnosis_with_organization(str(diagnosis.pk))
            organization = row.organization if row is not None else None

        assert len(queries.captured_queries) == 1  # the organisation came with it
        assert row is not None
        for field in Diagnosis._meta.concrete_fields:
            value, wanted = getattr(row, field.attname), getattr(expected, field.attname)
            assert (value, type(value)) == (wanted, type(wanted)), field.name
        assert (row._state.adding, row._state.db) == (False, "default")
        assert organization == expected.organization
        if organization is not None:
            assert isinstance(organization, Organization)
            assert (organization.name, organization.created_at) == (acme.name, acme.created_at)
    assert lifecycle._diagnosis_with_organization(str(uuid.uuid4())) is None
