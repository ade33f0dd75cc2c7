"""The life cycle of a diagnosis once submitted: the enqueue of its pipeline, stage claims with
leases, completion (which hands the next stage on to the same worker) and failure.

Every stage of every diagnosis runs a claim and a completion, compare-and-set UPDATEs of one
row. They are written in SQL here rather than with the ORM, whose query compilation cost more
CPU than the statements themselves; values still go through their model fields' conversion to
the database (UUIDs, times, JSON), as the ORM's would, so they run on PostgreSQL and SQLite.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

import celery
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Field
from django.utils import timezone

from accounts.selectors import (
    masking_rules_from,
    masking_rules_sql,
    organization_join_sql,
    organization_of,
)
from billing_tiers.services import refund_quota_for
from config.celery import app as celery_app
from config.celery import publisher as task_publisher
from diagnosis.hooks import diagnosis_finished, idle_sql
from diagnosis.models import Diagnosis
from diagnosis.pipeline.table import (
    active_statuses,
    is_active,
    longest_path,
    may_claim,
    stage_of,
    stages_from,
    status_after,
)
from diagnosis.staging import MASKED, RAW, get_store, staging_key
from encyclopedia.selectors import CURRENT_VERSION_SQL, version_from
from plumbing import sql
from rootcause.masking.rules import Rule

if TYPE_CHECKING:
    from plumbing.sql import SQLValue

logger = logging.getLogger(__name__)

Status = Diagnosis.Status


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
        # One message per diagnosis, without send_task's machinery (plumbing/broker.py).
        task_publisher.publish(task, (str(diagnosis_id),))


def _field(name: str) -> Field[Any, Any]:  # any of the model's fields, whatever it holds
    field = Diagnosis._meta.get_field(name)
    assert isinstance(field, Field), name
    return field


@cache
def _column(name: str) -> str:
    return connection.ops.quote_name(_field(name).column)


def _db_value(name: str, value: object) -> SQLValue:
    return sql.param(Diagnosis, name, value)


def _update_diagnosis(
    values: dict[str, object], *, where: str, params: list[SQLValue], count_attempt: bool = False
) -> int:
    """UPDATE the diagnosis rows that `where` (SQL, with `params`) selects: set `values` (model
    field names) and, with `count_attempt`, add one to attempts. Returns how many changed."""
    statement, saved = _update_sql(values, where=where, count_attempt=count_attempt)
    with connection.cursor() as cursor:
        cursor.execute(statement, [*saved, *params])
        return int(cursor.rowcount)


def _update_sql(
    values: dict[str, object], *, where: str, count_attempt: bool
) -> tuple[str, list[SQLValue]]:
    """The UPDATE's text and its SET values, as the database takes them."""
    assignments = [f"{_column(name)} = %s" for name in values]
    if count_attempt:
        assignments.append(f"{_column('attempts')} = {_column('attempts')} + 1")
    # Only names (the model's, quoted) and placeholders go into the text; values are parameters.
    table = connection.ops.quote_name(Diagnosis._meta.db_table)
    statement = f"UPDATE {table} SET {', '.join(assignments)} WHERE {where}"  # noqa: S608
    saved = [_field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    return statement, saved


@dataclass(frozen=True)
class ReadWithClaim:
    """What the stages read besides the row, read in the claim's own statement (PostgreSQL) at
    the moment the stage is claimed, instead of a statement each when the stage starts: the
    organisation's masking rules (the mask stage) and the current catalogue version (the match
    stage's engine; a diagnosis started before an admin's edit finishes with the catalogue it
    started with). None where the claim did not read them (SQLite, the embedded mode): the
    stage reads them itself."""

    masking_rules: list[Rule] | None = None
    catalogue_version: str | None = None


def _updated_with_organization(
    values: dict[str, object], *, where: str, params: list[SQLValue]
) -> tuple[Diagnosis, ReadWithClaim] | None:
    """`_update_diagnosis` (attempts counted) and `_diagnosis_with_organization` of the row it
    changed, in one statement: the row as written, with its organisation, and what the stages
    read besides (ReadWithClaim); None if `where` selected no row (nothing changed). SQLite (the
    embedded mode) takes no UPDATE in a WITH: there, the two statements, and nothing besides."""
    if connection.vendor != "postgresql":
        if not _update_diagnosis(values, where=where, params=params, count_attempt=True):
            return None
        row = _diagnosis_with_organization(str(params[0]))
        return (row, ReadWithClaim()) if row is not None else None
    update, saved = _update_sql(values, where=where, count_attempt=True)
    statement = f"WITH changed AS ({update} RETURNING *) {_claimed_read_sql()}"
    rows = sql.fetch_all(statement, [*saved, *params])
    if not rows:
        return None
    *columns, rules, version = rows[0]
    return _with_organization(columns), ReadWithClaim(
        masking_rules=masking_rules_from(rules), catalogue_version=version_from(version)
    )


@lru_cache(maxsize=1)
def _claimed_read_sql() -> str:
    """What the claim's statement reads of the row it changed (`changed`): its columns, its
    organisation's, and ReadWithClaim's. Built once: only names and fragments, the same at each
    claim (the columns' quoting is the connection's)."""
    organization, join = organization_join_sql("o", "d.organization_id")
    return (
        f"SELECT {sql.columns(Diagnosis, 'd')}, {organization},"  # noqa: S608 - names only
        f" {masking_rules_sql('d.organization_id')}, {CURRENT_VERSION_SQL}"
        f" FROM changed d {join}"
    )


def _diagnosis_with_organization(diagnosis_id: str) -> Diagnosis | None:
    """The row as `Diagnosis.objects.select_related("organization").filter(id=…).first()`
    reads it: one statement, its organisation (None for a visitor's) loaded with it."""
    rows = sql.fetch_all(_diagnosis_with_organization_sql(), [_db_value("id", diagnosis_id)])
    return _with_organization(rows[0]) if rows else None


def _with_organization(values: Sequence[object]) -> Diagnosis:
    """The row of a statement that selects the diagnosis' columns then its organisation's."""
    split = len(Diagnosis._meta.concrete_fields)
    row = sql.instance(Diagnosis, values[:split])
    organization = organization_of(values[split:]) if row.organization_id is not None else None
    Diagnosis.organization.field.set_cached_value(row, organization)
    return row


@lru_cache(maxsize=1)
def _diagnosis_with_organization_sql() -> str:
    # Built on first use: the columns' quoting is the connection's. The organisation's part is
    # accounts' (its table).
    organization, join = organization_join_sql("o", "d.organization_id")
    return (
        f"SELECT {sql.columns(Diagnosis, 'd')}, {organization}"  # noqa: S608 - names only
        f" FROM diagnosis_diagnosis d {join} WHERE d.id = %s"
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
    # Read with the claim's statement; a stage handed on keeps what the first claim read.
    read: ReadWithClaim = field(default_factory=lambda: ReadWithClaim(), compare=False)
    # Raises LeaseLost once the lease may be another worker's; runners call it between chunks
    # of their work (the loop puts the lease's check here while the heartbeat renews it).
    check: Callable[[], None] = field(default=lambda: None, compare=False)


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
    max_attempts = settings.DIAGNOSIS_MAX_ATTEMPTS * longest_path()
    # The claimed row as written, with its organisation (the stages read it: its masking rules,
    # its tier's fix steps), in the claim's statement; read on its own only when not claimed.
    claimed = _updated_with_organization(
        {
            "status": stage,
            "lease_expires_at": now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS),
            "lease_token": token,
            "updated_at": now,
        },
        where=f"{_column('id')} = %s AND {_column('attempts')} < %s AND ({waiting_for})",
        params=[_db_value("id", diagnosis_id), max_attempts, *waiting_params],
    )
    if claimed is not None:
        return Claim(claimed[0], token, read=claimed[1])
    row = _diagnosis_with_organization(diagnosis_id)
    if row is None:
        return None
    lease_live = row.lease_expires_at is not None and row.lease_expires_at >= now
    if is_active(row.status) and not lease_live and row.attempts >= max_attempts:
        fail_diagnosis(diagnosis_id=diagnosis_id, reason="gave up after repeated worker failures")
        return None
    if row.status == stage and lease_live:
        assert row.lease_expires_at is not None
        return Busy(max(1.0, (row.lease_expires_at - now).total_seconds()))
    return None


def complete_stage(claim: Claim, *, fields: Mapping[str, object] | None = None) -> bool:
    """Hands the diagnosis on to the next stage, only if this claim still holds the lease.

    With `claim.then`, the same UPDATE claims the next stage for that lease, within the attempts
    claim_stage allows (past them the next stage is left unclaimed, for claim_stage to give up
    on). On success `claim.diagnosis` is updated in memory to the row as written.
    """
    stage = stage_of(claim.diagnosis.status)
    next_status = status_after(stage, claim.diagnosis.kind)
    now = timezone.now()
    values: dict[str, object] = {
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
    next_lease: dict[str, object] = {}
    if claim.then is not None and next_status != Status.DONE:
        next_lease = {
            "lease_expires_at": now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS),
            "lease_token": claim.then,
        }
        changed = _update_diagnosis(
            {**values, **next_lease},
            count_attempt=True,
            where=f"{held} AND {_column('attempts')} < %s",
            params=[*held_params, settings.DIAGNOSIS_MAX_ATTEMPTS * longest_path()],
        )
        if not changed:
            next_lease = {}
            changed = _update_diagnosis(values, where=held, params=held_params)
    elif next_status == Status.DONE:
        changed = _finish(values, held=held, params=held_params, claim=claim)
    else:
        changed = _update_diagnosis(values, where=held, params=held_params)
    if changed == 1:
        for name, value in {**values, **next_lease}.items():
            setattr(claim.diagnosis, name, value)
        if next_lease:
            claim.diagnosis.attempts += 1
    return changed == 1


def _finish(values: dict[str, object], *, held: str, params: list[SQLValue], claim: Claim) -> int:
    """Marks the diagnosis done (`values`) while `held` holds; what reacts to a finished
    diagnosis (the alerts' outbox rows) commits with the status, or neither does. Where no
    reaction has anything to do (the hooks' `idle_sql`: an organisation without alerts) the
    UPDATE alone, in autocommit, one round trip instead of a transaction's four; where one has,
    that UPDATE changes nothing and the transaction runs the reactions."""
    table = connection.ops.quote_name(Diagnosis._meta.db_table)
    idle = idle_sql(f"{table}.{_column('organization')}")
    if idle is not None and _update_diagnosis(values, where=f"{held} AND ({idle})", params=params):
        return 1
    with transaction.atomic():
        changed = _update_diagnosis(values, where=held, params=params)
        if changed == 1:
            diagnosis_finished(
                diagnosis_id=claim.diagnosis.id, organization_id=claim.diagnosis.organization_id
            )
    return changed


def renew_lease(*, diagnosis_id: str, status: str, token: uuid.UUID) -> datetime | None:
    """Extends the lease under `token` on stage `status` by DIAGNOSIS_STAGE_LEASE_SECONDS from
    now, only while it is still live and still that token's (the heartbeat,
    diagnosis/pipeline/lease.py). Returns the new expiry, or None: the lease expired or passed
    to another worker, and is not revived."""
    now = timezone.now()
    expires_at = now + timedelta(seconds=settings.DIAGNOSIS_STAGE_LEASE_SECONDS)
    renewed = _update_diagnosis(
        {"lease_expires_at": expires_at},
        where=(
            f"{_column('id')} = %s AND {_column('status')} = %s AND {_column('lease_token')} = %s"
            f" AND {_column('lease_expires_at')} >= %s"
        ),
        params=[
            _db_value("id", diagnosis_id),
            status,
            _db_value("lease_token", token),
            _db_value("lease_expires_at", now),
        ],
    )
    return expires_at if renewed == 1 else None


def handed_on(claim: Claim) -> Claim | None:
    """The claim on the next stage that completing `claim` took with it (see Claim.then), if it
    did; None when the diagnosis is done or the next stage was left unclaimed."""
    diagnosis = claim.diagnosis
    if claim.then is not None and diagnosis.lease_token == claim.then:
        return Claim(diagnosis, claim.then, read=claim.read)
    return None


def fail_diagnosis(
    *,
    diagnosis_id: str,
    reason: str,
    status: str | None = None,
    token: uuid.UUID | None = None,
) -> bool:
    """Marks an active diagnosis failed for a reason on our side: the raw log goes with it and
    the quota unit it was charged is refunded. With `status`, only if it is still in it; with
    `token`, only if that lease still holds it (a stage whose lease was taken over does not fail
    the diagnosis its new holder is working on)."""
    now = timezone.now()
    statuses = (status,) if status else active_statuses()
    held = Diagnosis.objects.filter(id=diagnosis_id, status__in=statuses)
    if token is not None:
        held = held.filter(lease_token=token)
    changed = held.update(
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
