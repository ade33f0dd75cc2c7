"""Writes of the diagnosis life cycle: intake, stage claims with leases, completion and failure."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import secrets
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from itertools import chain
from typing import Any

import celery
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor, actor_for_person
from accounts.models import Organization
from accounts.selectors import require_manager
from accounts.services import create_personal_organization
from billing_tiers.entitlements import Entitlements
from billing_tiers.errors import QuotaExceeded
from billing_tiers.selectors import (
    QuotaStatus,
    entitlements_for,
    entitlements_for_organization,
    next_reset,
    quota_subject,
    utc_day,
)
from billing_tiers.services import (
    charge_quota,
    charge_quota_creating,
    check_quota,
    refund_quota_for,
)
from config import sql
from config.broker import QueuedMessage
from config.celery import app as celery_app
from config.celery import publisher as task_publisher
from config.problems import (
    ApplicationError,
    Conflict,
    PayloadTooLarge,
    ServiceUnavailable,
    Unprocessable,
    outage_errors,
)
from diagnosis.hooks import diagnosis_finished
from diagnosis.metrics import QUOTA_REFUSALS
from diagnosis.models import Diagnosis
from diagnosis.selectors import access_key_digest, idempotency_key_digest, submission_facts
from diagnosis.stages import STAGES, may_claim, stage_of, stages_from, status_after
from diagnosis.staging import (
    MASKED,
    RAW,
    RedisStagingStore,
    get_store,
    staged_id,
    staging_key,
)
from rootcause.intake import not_a_log
from rootcause.masking import Masker
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.masking.recognizer import shared_analyzer
from rootcause.masking.rules import Rule

logger = logging.getLogger(__name__)

Status = Diagnosis.Status


def masking_secret(diagnosis_id: uuid.UUID | str) -> bytes:
    """Per-diagnosis pseudonym key: stable across retries of one diagnosis, unrelated across two."""
    return hmac.new(
        settings.SECRET_KEY.encode(), f"mask:{diagnosis_id}".encode(), hashlib.sha256
    ).digest()


class LogRejected(ApplicationError):
    title = "Log rejected"


def _limited(chunks: Iterable[bytes], limit: int) -> Iterable[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise PayloadTooLarge(f"The log is larger than the limit of {limit} bytes.")
        yield chunk


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _masker_of_names(diagnosis_id: uuid.UUID, rules: list[Rule]) -> Masker:
    """The masker of a submission's file name and CI metadata: the organisation's rules and the
    operator's recognizers (MASKING_RECOGNIZERS_FILE), as the mask stage has them. Without either,
    Presidio's analyzer runs only where one of its recognizers could find something (WHEN_NEEDED,
    which masks as the analyzer would: tests/rootcause/test_masking_density.py), so that a plain
    file name costs no analyzer call."""
    recognizers = settings.MASKING_RECOGNIZERS_FILE
    return Masker(
        secret=masking_secret(diagnosis_id),
        rules=rules,
        analyzer=shared_analyzer(recognizers) if recognizers else WHEN_NEEDED,
    )


def _masked_filename(filename: str, masker: Masker) -> str:
    """The name is shown back to the user: only its last component, masked like the log."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].replace("\n", " ")
    return masker.mask(base)[:255]


@dataclass(frozen=True)
class JobMetadata:
    """What a CI job says about itself; shown in the history beside the file name."""

    job: str = ""
    run_url: str = ""
    commit: str = ""
    labels: tuple[str, ...] = ()


def _masked_metadata(metadata: JobMetadata, masker: Masker) -> dict[str, Any]:
    """The metadata as stored: masked like the log (a job name or a URL may hold a host or a
    user name), on one line, cut to the columns' lengths (a pseudonym may be longer)."""
    return {
        "job": masker.mask(_one_line(metadata.job))[:200],
        "run_url": masker.mask(metadata.run_url.strip())[:500],
        "commit": masker.mask(metadata.commit.strip())[:100],
        "labels": [masker.mask(_one_line(label))[:100] for label in metadata.labels],
    }


@dataclass(frozen=True)
class Submission:
    diagnosis: Diagnosis
    created: bool
    # Who was charged: the caller, or for a person who had no organisation, the same person
    # acting for the personal one made for them.
    actor: Actor
    # A visitor's key to the result, in its link: given out in this answer only (the row keeps
    # its digest). Empty for an organisation's diagnosis.
    access_key: str = ""
    # The actor's tier, as worked out once for the quota check and the charge (None for a
    # repeated Idempotency-Key, which is charged nothing).
    entitlements: Entitlements | None = None
    # The quota right after this submission's charge, from the charge itself (None if unknown):
    # the answer's headers need no other read.
    quota: QuotaStatus | None = None


class KeyAlreadyUsed(Conflict):
    title = "Idempotency-Key already used"


class KeyReused(Unprocessable):
    slug = "idempotency-key-reused"
    title = "Idempotency-Key reused with another log"


# How long an Idempotency-Key names its diagnosis; after that the same key makes a new one.
IDEMPOTENCY_WINDOW = timedelta(hours=24)


def _acting_for_an_organization(actor: Actor) -> Actor:
    """A person with no organisation gets their personal one, so their diagnoses have a history
    and the charge goes to the organisation like everybody else's."""
    if actor.is_person and actor.organization is None:
        assert actor.user is not None
        organization = create_personal_organization(user=actor.user)
        return actor_for_person(actor.user, organization.pk)
    return actor


def _by_idempotency_key(actor: Actor, digest: str) -> Diagnosis | None:
    """The diagnosis the key names, while its window lasts. Past the window the old diagnosis
    lets go of the key (compare-and-set), so that the same key can make a new one."""
    if actor.organization is not None:
        found = Diagnosis.objects.filter(
            organization=actor.organization, idempotency_key_digest=digest
        ).first()
    elif actor.anonymous_subject:
        found = Diagnosis.objects.filter(
            organization__isnull=True,
            anonymous_subject=actor.anonymous_subject,
            idempotency_key_digest=digest,
        ).first()
    else:
        return None
    if found is not None and found.created_at <= timezone.now() - IDEMPOTENCY_WINDOW:
        Diagnosis.objects.filter(pk=found.pk, idempotency_key_digest=digest).update(
            idempotency_key_digest=""
        )
        return None
    return found


def _repeated(actor: Actor, diagnosis: Diagnosis, body_digest: str) -> Submission:
    # Rows from before logs were digested have none: they match any log.
    if diagnosis.body_digest and body_digest != diagnosis.body_digest:
        raise KeyReused(
            "This Idempotency-Key already made a diagnosis of another log. A retry must send "
            "the same log; send a new key to diagnose a different one."
        )
    if diagnosis.organization_id is None:
        # Only the digest of a visitor's access key is kept, so the link cannot be given again.
        raise KeyAlreadyUsed(
            "This Idempotency-Key already made a diagnosis; its link was in the first answer "
            "and cannot be shown again. Send a new key to diagnose again."
        )
    return Submission(diagnosis, created=False, actor=actor)


def _hashed(chunks: Iterable[bytes], hasher: Any) -> Iterator[bytes]:
    for chunk in chunks:
        hasher.update(chunk)
        yield chunk


def _digest_of(chunks: Iterable[bytes]) -> str:
    hasher = hashlib.sha256()
    for chunk in chunks:
        hasher.update(chunk)
    return hasher.hexdigest()


def submit_diagnosis(
    *,
    actor: Actor,
    chunks: Iterable[bytes],
    source: str,
    filename: str = "",
    metadata: JobMetadata | None = None,
    idempotency_key: str = "",
) -> Submission:
    """Accepts a log: charges a unit of the actor's daily quota and creates the row in one
    transaction, stages the raw bytes, enqueues the pipeline after commit.

    A repeated Idempotency-Key (within IDEMPOTENCY_WINDOW) returns the first diagnosis unchanged
    and charges nothing, if the log is the same (KeyReused, 422, if not; the log is read to
    compare its digest, never staged). A visitor's diagnosis belongs to no organisation: it is
    reachable by the link with the returned access key until ANONYMOUS_RESULT_HOURS have passed.
    """
    limit = settings.ROOTCAUSE_MAX_LOG_BYTES
    key_digest = idempotency_key_digest(idempotency_key) if idempotency_key else ""
    if key_digest:
        existing = _by_idempotency_key(actor, key_digest)
        if existing is not None:
            return _repeated(actor, existing, _digest_of(_limited(chunks, limit)))

    iterator = iter(chunks)
    first = next((c for c in iterator if c), b"")
    if not first:
        raise LogRejected("The log is empty.")
    reason = not_a_log(first)
    if reason:
        raise LogRejected(f"The log {reason}.")

    actor = _acting_for_an_organization(actor)
    # Refused before staging: an upload over quota is never copied to Redis. The unit is charged
    # later, with the row.
    # The tier once for the check, the charge and the answer's quota headers: it takes queries.
    # An organisation's tier facts, masking rules and quota use are read in one statement.
    used_today: int | None = None
    masking_rules: list[Rule] = []
    if actor.organization is None:
        entitlements = entitlements_for(actor)
    else:
        facts = submission_facts(
            actor.organization, quota_subject=quota_subject(actor), day=utc_day(timezone.now())
        )
        entitlements = entitlements_for(actor, standing=facts.standing)
        used_today, masking_rules = facts.used_today, facts.masking_rules
    try:
        check_quota(actor=actor, entitlements=entitlements, used=used_today)
    except QuotaExceeded:
        QUOTA_REFUSALS.inc()
        raise

    diagnosis_id = uuid.uuid4()
    access_key = ""
    visitor: dict[str, Any] = {}
    if actor.organization is None:
        access_key = secrets.token_urlsafe(24)
        visitor = {
            "anonymous_subject": actor.anonymous_subject,
            "access_key_digest": access_key_digest(access_key),
            "expires_at": timezone.now() + timedelta(hours=settings.ANONYMOUS_RESULT_HOURS),
        }
    store = get_store(settings.REDIS_URL)
    raw_key = staging_key(RAW, diagnosis_id)
    # The log's digest is taken as it streams into the staging store.
    hasher = hashlib.sha256()
    earlier: Diagnosis | None = None
    try:
        try:
            # A short TTL until the row commits (diagnosis/staging.py): a process killed
            # mid-upload leaves no raw log behind for long.
            size = store.write(
                raw_key,
                _hashed(_limited(chain([first], iterator), limit), hasher),
                ttl_seconds=settings.STAGING_PENDING_TTL_SECONDS,
            )
        except redis.RedisError:
            logger.warning("could not stage a log: Redis is unavailable")
            raise ServiceUnavailable() from None
        body_digest = hasher.hexdigest()
        # The file name and CI metadata are masked like the log, with the organisation's rules.
        masker = _masker_of_names(diagnosis_id, masking_rules)
        diagnosis = Diagnosis(
            id=diagnosis_id,
            organization=actor.organization,
            created_by=actor.user if actor.is_person else None,
            source=source,
            filename=_masked_filename(filename, masker),
            **_masked_metadata(metadata or JobMetadata(), masker),
            size_bytes=size,
            idempotency_key_digest=key_digest,
            body_digest=body_digest,
            **visitor,
        )
        if not key_digest:
            # The unit, its charge and the row together: one statement on PostgreSQL, committed
            # by itself (so the callback runs at once, unless a caller's transaction is open).
            charge = charge_quota_creating(diagnosis, actor=actor, entitlements=entitlements)
            transaction.on_commit(lambda: _keep_and_enqueue(diagnosis.id, raw_key))
        else:
            with transaction.atomic():
                # The quota ledger gets the key's digest too: no table holds the key itself.
                charge = charge_quota(
                    actor=actor,
                    reference=diagnosis_id,
                    idempotency_key=key_digest,
                    entitlements=entitlements,
                )
                if charge.reference != str(diagnosis_id):
                    # The key's first charge, made for another diagnosis: a racing duplicate
                    # that committed first, or one deleted or past its window since (then this
                    # one is charged anew).
                    earlier = _by_idempotency_key(actor, key_digest)
                    if earlier is None:
                        charge = charge_quota(
                            actor=actor, reference=diagnosis_id, entitlements=entitlements
                        )
                if earlier is None:
                    sql.insert(diagnosis)  # Diagnosis.objects.create, its statement made once
                    transaction.on_commit(lambda: _keep_and_enqueue(diagnosis.id, raw_key))
    except IntegrityError:
        # Two requests with the same Idempotency-Key raced; the other one won, and this one's
        # charge went with its rolled-back transaction.
        store.delete(raw_key)
        earlier = _by_idempotency_key(actor, key_digest) if key_digest else None
        if earlier is None:
            raise
        return _repeated(actor, earlier, body_digest)
    except BaseException:
        # Best effort: with Redis away the key is gone or expires within the pending TTL, and
        # the sweeper deletes what is left; the original error is the one to report.
        with contextlib.suppress(redis.RedisError):
            store.delete(raw_key)
        raise
    if earlier is not None:
        store.delete(raw_key)
        return _repeated(actor, earlier, body_digest)
    quota = None
    if charge.used_today is not None:
        limit = entitlements.daily_diagnoses
        quota = QuotaStatus(
            tier=entitlements.tier,
            limit=limit,
            used=charge.used_today,
            remaining=max(0, limit - charge.used_today),
            reset=next_reset(timezone.now()),
        )
    return Submission(
        diagnosis,
        created=True,
        actor=actor,
        access_key=access_key,
        entitlements=entitlements,
        quota=quota,
    )


LOST_IN_OUTAGE = (
    "the log was lost in an outage of our staging store before it could be diagnosed; "
    "please submit it again (this one was not counted)"
)


def _keep_and_enqueue(diagnosis_id: uuid.UUID, raw_key: str) -> None:
    """After the row commits: the staged log gets its backstop TTL, and the chain is enqueued.

    With a broker, both in one round trip to Redis, the message only if the log is still there
    (`RedisStagingStore.expire_and_push`; the embedded mode has no queue: its tasks run here).
    If the log is already gone (Redis restarted since it was staged), the diagnosis is failed
    and refunded at once and the caller gets a 503, never a 202 for a log that was not kept. If
    only the enqueue fails (the message could not be made), the log and the row are kept, and
    the row is marked due for the stuck sweeper's next round (`_due_for_the_sweeper`), which
    enqueues it again.
    """
    store = get_store(settings.REDIS_URL)
    ttl = settings.ROOTCAUSE_RAW_TTL_SECONDS
    broker = store if isinstance(store, RedisStagingStore) else None
    message = _queued_message(diagnosis_id) if broker is not None else None
    try:
        if broker is not None and message is not None:
            kept = broker.expire_and_push(raw_key, ttl, message.key, message.payload)
        else:
            kept = store.expire(raw_key, ttl)
    except redis.RedisError:
        kept = False
    if not kept:
        fail_diagnosis(diagnosis_id=str(diagnosis_id), reason=LOST_IN_OUTAGE)
        raise ServiceUnavailable()
    if message is not None:
        return
    try:
        enqueue_pipeline(diagnosis_id, Status.QUEUED)
    except outage_errors() as exc:
        logger.warning(
            "could not enqueue diagnosis %s (%s); the sweeper will",
            diagnosis_id,
            type(exc).__name__,
        )
        _due_for_the_sweeper(diagnosis_id)


def _queued_message(diagnosis_id: uuid.UUID) -> QueuedMessage | None:
    """The new diagnosis' task message, for the staging store to push with the log's TTL; None
    in the embedded mode (Celery runs the task in-process) or when it cannot be made (the
    broker away: `enqueue_pipeline` is then tried on its own, and the sweeper after it). The
    broker is the staging store's Redis: both are REDIS_URL (config/settings.py)."""
    if celery_app.conf.task_always_eager:
        return None
    task = pipeline_from(Status.QUEUED)
    assert task is not None  # a queued diagnosis always has a stage to run
    try:
        return task_publisher.message_for(task, (str(diagnosis_id),))
    except outage_errors():
        return None


def _due_for_the_sweeper(diagnosis_id: uuid.UUID) -> None:
    """A queued diagnosis whose message was never published: its lease is set to expire now, so
    that the stuck sweeper's next round (every DIAGNOSIS_SWEEP_SECONDS) enqueues it, and not
    only once it has made no progress for DIAGNOSIS_STUCK_AFTER_SECONDS. An expired lease is
    what any worker may claim, so a message that did get through meanwhile still runs it.
    With PostgreSQL away too, the row keeps waiting for the stuck deadline."""
    with contextlib.suppress(*outage_errors()):
        Diagnosis.objects.filter(
            id=diagnosis_id, status=Status.QUEUED, lease_expires_at__isnull=True
        ).update(lease_expires_at=timezone.now())


def delete_diagnosis(*, actor: Actor, diagnosis: Diagnosis) -> None:
    """Owners and admins delete their organisation's diagnoses (members and tokens may not).

    The unit it was charged is not given back: the work was done.
    """
    organization = require_manager(actor)
    if diagnosis.organization_id != organization.pk:
        raise Http404("No such diagnosis.")
    _delete(Diagnosis.objects.filter(pk=diagnosis.pk))


def _delete(diagnoses: QuerySet[Diagnosis]) -> int:
    """Deletes the rows and anything a running pipeline still staged for them."""
    ids = [str(i) for i in diagnoses.values_list("id", flat=True)]
    if not ids:
        return 0
    deleted, _ = Diagnosis.objects.filter(id__in=ids).delete()
    get_store(settings.REDIS_URL).delete(
        *(staging_key(kind, i) for i in ids for kind in (RAW, MASKED))
    )
    return deleted


# How many rows one purge deletes at most per statement, so that no delete holds locks for long.
PURGE_BATCH = 1000


def purge_expired_diagnoses() -> int:
    """Deletes visitors' diagnoses whose link has expired, and organisations' diagnoses older
    than their tier keeps history (TIER_HISTORY_DAYS). The periodic purge; safe to run twice."""
    now = timezone.now()
    purged = 0
    while True:
        batch = Diagnosis.objects.filter(organization__isnull=True, expires_at__lte=now)
        count = _delete(batch.order_by()[:PURGE_BATCH])
        purged += count
        if count < PURGE_BATCH:
            break
    # No tier keeps history for less than the shortest setting: only organisations with rows
    # older than that need their tier worked out.
    oldest_kept = now - timedelta(days=min(settings.TIER_HISTORY_DAYS.values()))
    organizations = (
        Organization.objects.filter(diagnoses__created_at__lt=oldest_kept).distinct().order_by()
    )
    for organization in organizations:
        days = entitlements_for_organization(organization).history_days
        if days is None:  # pragma: no cover - every organisation's tier keeps history
            continue
        cutoff = now - timedelta(days=days)
        while True:
            batch = Diagnosis.objects.filter(organization=organization, created_at__lt=cutoff)
            count = _delete(batch.order_by()[:PURGE_BATCH])
            purged += count
            if count < PURGE_BATCH:
                break
    if purged:
        logger.info("purged %d diagnoses past their retention", purged)
    return purged


def pipeline_from(status: str) -> str | None:
    """The task of the first stage still ahead of a diagnosis in `status` (None once it has
    finished).

    One message, not a chain of one per stage: the worker that takes it goes on through the
    stages after it (workers/tasks.py), claiming each in turn, so the log is not handed between
    workers and no message or claim is spent between stages. Tasks are named, not imported:
    `workers/` sits above this app and registers them.
    """
    ahead = stages_from(status)
    return ahead[0].task if ahead else None


def enqueue_pipeline(diagnosis_id: uuid.UUID, status: str) -> None:
    task = pipeline_from(status)
    if task is None:
        return
    if celery_app.conf.task_always_eager:
        # The embedded mode (and most tests): Celery runs the task here and now.
        celery.signature(task, args=(str(diagnosis_id),), immutable=True).apply_async()
    else:
        # One message per diagnosis, without send_task's machinery (config/broker.py).
        task_publisher.publish(task, (str(diagnosis_id),))


# --- Stage claims and completions -----------------------------------------------------------
# Every stage of every diagnosis runs a claim and a completion, compare-and-set UPDATEs of one
# row. They are written in SQL here rather than with the ORM, whose query compilation cost more
# CPU than the statements themselves; values still go through their model fields' conversion to
# the database (UUIDs, times, JSON), as the ORM's would, so they run on PostgreSQL and SQLite.


def _field(name: str) -> Field[Any, Any]:
    field = Diagnosis._meta.get_field(name)
    assert isinstance(field, Field), name
    return field


def _column(name: str) -> str:
    return connection.ops.quote_name(_field(name).column)


def _db_value(name: str, value: Any) -> Any:
    return sql.param(Diagnosis, name, value)


def _update_diagnosis(
    values: dict[str, Any], *, where: str, params: list[Any], count_attempt: bool = False
) -> int:
    """UPDATE the diagnosis rows that `where` (SQL, with `params`) selects: set `values` (model
    field names) and, with `count_attempt`, add one to attempts. Returns how many changed."""
    assignments = [f"{_column(name)} = %s" for name in values]
    if count_attempt:
        assignments.append(f"{_column('attempts')} = {_column('attempts')} + 1")
    # Only names (the model's, quoted) and placeholders go into the text; values are parameters.
    table = connection.ops.quote_name(Diagnosis._meta.db_table)
    sql = f"UPDATE {table} SET {', '.join(assignments)} WHERE {where}"  # noqa: S608
    saved = [_field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*saved, *params])
        return int(cursor.rowcount)


def _diagnosis_with_organization(diagnosis_id: str) -> Diagnosis | None:
    """The row as `Diagnosis.objects.select_related("organization").filter(id=…).first()`
    reads it: one statement, its organisation (None for a visitor's) loaded with it."""
    rows = sql.fetch_all(_diagnosis_with_organization_sql(), [_db_value("id", diagnosis_id)])
    if not rows:
        return None
    split = len(Diagnosis._meta.concrete_fields)
    row = sql.instance(Diagnosis, rows[0][:split])
    organization = (
        sql.instance(Organization, rows[0][split:]) if row.organization_id is not None else None
    )
    Diagnosis.organization.field.set_cached_value(row, organization)
    return row


@lru_cache(maxsize=1)
def _diagnosis_with_organization_sql() -> str:
    # Built on first use: the columns' quoting is the connection's.
    return (
        f"SELECT {sql.columns(Diagnosis, 'd')}, {sql.columns(Organization, 'o')}"  # noqa: S608 - names only
        " FROM diagnosis_diagnosis d LEFT JOIN accounts_organization o"
        " ON o.id = d.organization_id WHERE d.id = %s"
    )


@dataclass(frozen=True)
class Claim:
    """The right to run one stage of one diagnosis until the lease expires.

    With `then`, completing the stage also claims the next one, for the lease `then`, in the
    same UPDATE (`complete_stage`, then `handed_on`): the worker that holds the diagnosis goes on
    with it. Each stage is still claimed on its own, so a worker killed in the next stage is taken
    over at that stage.
    """

    diagnosis: Diagnosis
    token: uuid.UUID
    then: uuid.UUID | None = None


@dataclass(frozen=True)
class Busy:
    """Another worker holds the stage; try again after this many seconds."""

    retry_after: float


def claim_stage(
    *,
    diagnosis_id: str,
    stage: str,
    token: uuid.UUID | str | None = None,
    resume: bool = False,
) -> Claim | Busy | None:
    """Compare-and-set: take `stage` of the diagnosis if it is waiting for it or its lease expired.

    `token` names the lease; a task passes its own id, which its retries keep. With `resume` (a
    retry after a connection error) a live lease under the same token is taken again: the claim
    whose outcome the task could not learn (the UPDATE committed, then the connection broke) is
    its own, and waiting for it to expire would stall the diagnosis for the whole lease. A first
    delivery does not resume, so a duplicate of a message still running waits as before.
    None means there is nothing to do: the diagnosis is past this stage, finished or failed.
    """
    now = timezone.now()
    token = uuid.UUID(str(token)) if token else uuid.uuid4()
    statuses = may_claim(stage_of(stage))
    waiting_for = (
        f"{_column('status')} IN ({', '.join(['%s'] * len(statuses))})"
        f" AND ({_column('lease_expires_at')} IS NULL OR {_column('lease_expires_at')} < %s)"
    )
    waiting_params = [*statuses, _db_value("lease_expires_at", now)]
    if resume:
        waiting_for = (
            f"({waiting_for}) OR ({_column('status')} = %s AND {_column('lease_token')} = %s)"
        )
        waiting_params += [stage, _db_value("lease_token", token)]
    # Each stage may be attempted DIAGNOSIS_MAX_ATTEMPTS times; attempts count every stage claim.
    max_attempts = settings.DIAGNOSIS_MAX_ATTEMPTS * len(STAGES)
    claimed = _update_diagnosis(
        {
            "status": stage,
            "lease_expires_at": now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS),
            "lease_token": token,
            "updated_at": now,
        },
        count_attempt=True,
        where=f"{_column('id')} = %s AND {_column('attempts')} < %s AND ({waiting_for})",
        params=[_db_value("id", diagnosis_id), max_attempts, *waiting_params],
    )
    # With its organisation: the stages read it (its masking rules, its tier's fix steps).
    row = _diagnosis_with_organization(diagnosis_id)
    if row is None:
        return None
    if claimed:
        return Claim(row, token)
    lease_live = row.lease_expires_at is not None and row.lease_expires_at >= now
    if row.status in Diagnosis.ACTIVE_STATUSES and not lease_live and row.attempts >= max_attempts:
        fail_diagnosis(diagnosis_id=diagnosis_id, reason="gave up after repeated worker failures")
        return None
    if row.status == stage and lease_live:
        assert row.lease_expires_at is not None
        return Busy(max(1.0, (row.lease_expires_at - now).total_seconds()))
    return None


def complete_stage(claim: Claim, *, fields: dict[str, Any] | None = None) -> bool:
    """Hands the diagnosis on to the next stage, only if this claim still holds the lease.

    With `claim.then`, the same UPDATE claims the next stage for that lease, within the attempts
    claim_stage allows (past them the next stage is left unclaimed, for claim_stage to give up
    on). On success `claim.diagnosis` is updated in memory to the row as written.
    """
    stage = stage_of(claim.diagnosis.status)
    next_status = status_after(stage)
    now = timezone.now()
    values: dict[str, Any] = {
        "status": next_status,
        "progress": stage.percent_done,
        "lease_expires_at": None,
        "lease_token": None,
        "updated_at": now,
        **(fields or {}),
    }
    if next_status == Status.DONE:
        values["finished_at"] = now
    # The lease is still ours: the row is in the stage we claimed, under our token.
    held = f"{_column('id')} = %s AND {_column('status')} = %s AND {_column('lease_token')} = %s"
    held_params = [
        _db_value("id", claim.diagnosis.id),
        claim.diagnosis.status,
        _db_value("lease_token", claim.token),
    ]
    next_lease: dict[str, Any] = {}
    if claim.then is not None and next_status != Status.DONE:
        next_lease = {
            "lease_expires_at": now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS),
            "lease_token": claim.then,
        }
        changed = _update_diagnosis(
            {**values, **next_lease},
            count_attempt=True,
            where=f"{held} AND {_column('attempts')} < %s",
            params=[*held_params, settings.DIAGNOSIS_MAX_ATTEMPTS * len(STAGES)],
        )
        if not changed:
            next_lease = {}
            changed = _update_diagnosis(values, where=held, params=held_params)
    elif next_status == Status.DONE:
        with transaction.atomic():
            changed = _update_diagnosis(values, where=held, params=held_params)
            if changed == 1:
                # What reacts to a finished diagnosis (the alerts' outbox rows) commits with the
                # status, or neither does.
                diagnosis_finished(
                    diagnosis_id=claim.diagnosis.id,
                    organization_id=claim.diagnosis.organization_id,
                )
    else:
        changed = _update_diagnosis(values, where=held, params=held_params)
    if changed == 1:
        for name, value in {**values, **next_lease}.items():
            setattr(claim.diagnosis, name, value)
        if next_lease:
            claim.diagnosis.attempts += 1
    return changed == 1


def handed_on(claim: Claim) -> Claim | None:
    """The claim on the next stage that completing `claim` took with it (see Claim.then), if it
    did; None when the diagnosis is done or the next stage was left unclaimed."""
    diagnosis = claim.diagnosis
    if claim.then is not None and diagnosis.lease_token == claim.then:
        return Claim(diagnosis, claim.then)
    return None


def fail_diagnosis(*, diagnosis_id: str, reason: str, status: str | None = None) -> bool:
    """Marks an active diagnosis failed for a reason on our side: the raw log goes with it and
    the quota unit it was charged is refunded. With `status`, only if it is still in it."""
    now = timezone.now()
    statuses = [status] if status else Diagnosis.ACTIVE_STATUSES
    changed = Diagnosis.objects.filter(id=diagnosis_id, status__in=statuses).update(
        status=Status.FAILED,
        failure_reason=reason[:255],
        lease_expires_at=None,
        lease_token=None,
        updated_at=now,
        finished_at=now,
    )
    if changed:
        get_store(settings.REDIS_URL).delete(
            staging_key(RAW, diagnosis_id), staging_key(MASKED, diagnosis_id)
        )
        # A failure on our side gives the unit back (once, whoever calls this again).
        refund_quota_for(reference=diagnosis_id)
        logger.warning("diagnosis %s failed: %s", diagnosis_id, reason)
    return changed == 1


def requeue_stuck_diagnoses() -> int:
    """Re-enqueues active diagnoses with no progress past the deadline (the beat sweeper)."""
    now = timezone.now()
    deadline = now - timedelta(seconds=settings.DIAGNOSIS_STUCK_AFTER_SECONDS)
    stuck = Diagnosis.objects.filter(status__in=Diagnosis.ACTIVE_STATUSES).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=deadline)
    )
    count = 0
    for diagnosis_id, status in stuck.values_list("id", "status")[:500]:
        enqueue_pipeline(diagnosis_id, status)
        count += 1
    if count:
        logger.info("re-queued %d stuck diagnoses", count)
    return count


# What each active status still needs from the staging store; remediating needs nothing there.
NEEDS_STAGED = {Status.QUEUED: RAW, Status.MASKING: RAW, Status.MATCHING: MASKED}
# Active diagnoses looked at per sweep; more wait for the next one.
SWEEP_BATCH = 5000


@dataclass(frozen=True)
class StagingSweep:
    lost: int  # diagnoses failed (and refunded) because their staged log was gone
    orphans: int  # staged logs deleted because no diagnosis row named them


def sweep_staging() -> StagingSweep:
    """The staging sweeper (beat, every STAGING_SWEEP_SECONDS; safe to run concurrently).

    1. An active diagnosis whose staged input is gone (Redis restarted and came back empty) can
       never finish: it is failed with a reason that says so, and refunded, instead of waiting
       for the stuck-diagnosis deadline. The row commits only after its log is staged, so a
       committed row without its key really lost it; the failure is a compare-and-set on the
       status seen, so a stage that completed meanwhile (and deleted its input) is left alone.
    2. A staged log no diagnosis row names (its web process was killed mid-upload, or the row
       was deleted) is deleted once nobody has written it for STAGING_ORPHAN_IDLE_SECONDS.
    """
    store = get_store(settings.REDIS_URL)
    active = list(
        Diagnosis.objects.filter(status__in=list(NEEDS_STAGED))
        .order_by("created_at")
        .values_list("id", "status")[:SWEEP_BATCH]
    )
    keys = [staging_key(NEEDS_STAGED[Status(status)], i) for i, status in active]
    lost = 0
    for (diagnosis_id, status), exists in zip(active, store.existing(keys), strict=True):
        if not exists and fail_diagnosis(
            diagnosis_id=str(diagnosis_id), reason=LOST_IN_OUTAGE, status=status
        ):
            lost += 1
    orphans = 0
    for kind in (RAW, MASKED):
        staged = {staged_id(kind, key): key for key in store.keys_of(kind)}
        if not staged:
            continue
        known: set[str] = set()
        for batch in _batches(list(staged), 1000):
            valid = [i for i in batch if _is_uuid(i)]
            known |= {
                str(i)
                for i in Diagnosis.objects.filter(
                    id__in=valid, status__in=Diagnosis.ACTIVE_STATUSES
                ).values_list("id", flat=True)
            }
        for staged_as, key in staged.items():
            if staged_as in known:
                continue
            idle = store.idle_seconds(key)
            if idle is not None and idle >= settings.STAGING_ORPHAN_IDLE_SECONDS:
                store.delete(key)
                orphans += 1
    if lost or orphans:
        logger.warning("staging sweep: %d diagnoses lost their log, %d orphan keys", lost, orphans)
    return StagingSweep(lost=lost, orphans=orphans)


SWEEP_HEARTBEAT = "heartbeat:staging-sweep"


def record_sweep() -> None:
    """When the staging sweeper last ran, in the shared cache: beat's health check reads it, and
    it proves the whole chain (beat, Redis, a worker, PostgreSQL) is turning."""
    cache.set(SWEEP_HEARTBEAT, time.time(), timeout=24 * 3600)


def last_sweep_age() -> float | None:
    """Seconds since the staging sweeper last ran; None if it never did (or the cache lost it)."""
    at = cache.get(SWEEP_HEARTBEAT)
    return None if at is None else max(0.0, time.time() - float(at))


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
