"""Reads of diagnoses: an organisation's, scoped to the caller's, or a visitor's, by its link."""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache

from django.conf import settings
from django.db import connection
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import ApiToken, Organization
from accounts.selectors import (
    StandingFacts,
    live_token_params,
    live_token_sql,
    masking_rule_rows_params,
    masking_rule_rows_sql,
    standing_facts_of,
    standing_rows_params,
    standing_rows_sql,
    token_for_secret,
    token_of_row,
)
from billing_tiers.selectors import (
    organization_subject,
    organization_subject_sql,
    quota_used_params,
    quota_used_sql,
)
from diagnosis.models import Diagnosis
from plumbing import sql
from rootcause.masking.rules import Rule
from rootcause.result import DiagnosisResult, result_from_json


def access_key_digest(key: str) -> str:
    """What is stored of a visitor's access key. The key is random (192 bits): a plain hash
    suffices, and a lookup by digest compares no secret byte by byte."""
    return hashlib.sha256(key.encode()).hexdigest()


def idempotency_key_digest(key: str) -> str:
    """What is stored of an Idempotency-Key: keyed, because a key is chosen by the caller and may
    be guessable (a CI job number) or carry something secret; the whole key, however long."""
    return hmac.new(
        settings.SECRET_KEY.encode(), f"idempotency-key:{key}".encode(), hashlib.sha256
    ).hexdigest()


def _facts_rows_sql(organization_id: str = "%s", subject: str = "%s") -> str:
    """(tag, value, kind, label, at, id) of what a submission reads, composed of the fragments of
    the apps that own the tables (each reads only its own): tags 0 and 1 are accounts' standing
    rows (the tier's facts); 2 a masking rule of accounts' (its kind, value and label), in the
    order the rules were made; 3 today's use of billing_tiers' quota (no row: none yet). The
    planner flattens the subqueries: the same plan as the tables read inline. The organisation
    and the quota's subject are parameters, or expressions of an enclosing statement."""
    return (
        "SELECT tag, value, NULL AS kind, NULL AS label, at, id"  # noqa: S608 - no value in it
        f" FROM ({standing_rows_sql(organization_id)}) standing"
        " UNION ALL"
        f" SELECT 2, r.value, r.kind, r.label, r.at, r.id"
        f" FROM ({masking_rule_rows_sql(organization_id)}) r"
        " UNION ALL"
        " SELECT 3, CAST(q.used AS TEXT), NULL, NULL, NULL, NULL"
        f" FROM ({quota_used_sql(subject)}) q"
    )


_SUBMISSION_FACTS_SQL = (
    f"SELECT tag, value, kind, label FROM ({_facts_rows_sql()}) facts ORDER BY tag, at, id"  # noqa: S608 - no value in it
)


@dataclass(frozen=True)
class SubmissionFacts:
    """What a submission of an organisation reads before it stages its log, and which
    organisation and day they are of."""

    standing: StandingFacts  # for its tier (billing_tiers.entitlements.entitlements_for)
    masking_rules: list[Rule]  # for its file name and CI metadata, as for the log
    used_today: int  # of its quota, for the check before staging
    organization_id: uuid.UUID
    day: date


def _facts_of(rows: Iterable[sql.Row], organization_id: uuid.UUID, day: date) -> SubmissionFacts:
    """SubmissionFacts from the (tag, value, kind, label) of _facts_rows_sql's rows, in order."""
    return SubmissionFacts(
        standing=standing_facts_of((tag, value) for tag, value, _, _ in rows if tag < 2),
        masking_rules=[Rule(kind, value, label) for tag, value, kind, label in rows if tag == 2],
        used_today=next((int(value) for tag, value, _, _ in rows if tag == 3), 0),
        organization_id=organization_id,
        day=day,
    )


def submission_facts(
    organization: Organization, *, quota_subject: str, day: date
) -> SubmissionFacts:
    """In one statement, what three reads would tell: accounts.selectors.standing_facts,
    accounts.selectors.masking_rules_of and the use in billing_tiers.selectors.quota_status.
    Every submission asks them, and each statement costs about as much CPU as what it reads
    (docs/benchmarks.md)."""
    rows = sql.fetch_all(
        _SUBMISSION_FACTS_SQL,
        [
            *standing_rows_params(organization),
            *masking_rule_rows_params(organization),
            *quota_used_params(quota_subject, day),
        ],
    )
    return _facts_of(rows, organization.pk, day)


@cache
def _token_with_facts_sql() -> str:
    # The facts as one JSON array of [tag, value, kind, label], a column of the token's row.
    facts = _facts_rows_sql("t.organization_id", organization_subject_sql("t.organization_id"))
    return live_token_sql(
        ", (SELECT json_agg(json_build_array(f.tag, f.value, f.kind, f.label)"  # noqa: S608 - no value in it
        f" ORDER BY f.tag, f.at, f.id) FROM ({facts}) f)"
    )


def token_with_submission_facts(
    secret: str, *, day: date
) -> tuple[ApiToken, SubmissionFacts] | None:
    """accounts.selectors.token_for_secret and, of the token's organisation, submission_facts
    for `day`, in one statement: what every API submission reads first. None as
    token_for_secret's. PostgreSQL's (its JSON aggregate); elsewhere the two statements."""
    params = live_token_params(secret)
    if params is None:
        return None
    if connection.vendor != "postgresql":
        token = token_for_secret(secret)
        if token is None:
            return None
        organization = token.organization
        subject = organization_subject(organization.pk)
        return token, submission_facts(organization, quota_subject=subject, day=day)
    rows = sql.fetch_all(
        _token_with_facts_sql(),
        [
            *standing_rows_params(None),
            *masking_rule_rows_params(None),
            *quota_used_params(None, day),
            *params,
        ],
    )
    if not rows:
        return None
    token = token_of_row(rows[0])
    # JSON's arrays, as the rows of submission_facts' statement
    facts = [tuple(fact) for fact in rows[0][-1] or []]
    return token, _facts_of(facts, token.organization.pk, day)


# The history's search: at most this many words, of at most MAX_SEARCH_CHARS characters in all.
MAX_SEARCH_WORDS = 8
MAX_SEARCH_CHARS = 200


@dataclass(frozen=True)
class HistoryFilters:
    failure: str = ""  # a failure class's slug
    status: str = ""
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    # Words to find, each in the file name, the CI job, the failure class or the root cause.
    q: str = ""


def _searched(diagnoses: QuerySet[Diagnosis], query: str) -> QuerySet[Diagnosis]:
    """The diagnoses in which every word of `query` appears (case aside) in the file name, the
    CI job, the failure class's slug or the root cause's text. A scan of the organisation's
    rows the other filters left, along its history index: no text index to keep up on every
    write of a diagnosis."""
    for word in query.split()[:MAX_SEARCH_WORDS]:
        diagnoses = diagnoses.filter(
            Q(filename__icontains=word)
            | Q(job__icontains=word)
            | Q(failure_slug__icontains=word)
            | Q(result__root_cause__icontains=word)
        )
    return diagnoses


def diagnoses_for(actor: Actor, filters: HistoryFilters | None = None) -> QuerySet[Diagnosis]:
    """The history of the actor's organisation, newest first; nothing for a visitor or a person
    with no organisation yet (a visitor's diagnoses are in no history)."""
    if actor.organization is None:
        return Diagnosis.objects.none()
    diagnoses = Diagnosis.objects.filter(organization=actor.organization)
    if filters is not None:
        if filters.failure:
            diagnoses = diagnoses.filter(failure_slug=filters.failure)
        if filters.status:
            diagnoses = diagnoses.filter(status=filters.status)
        if filters.created_after is not None:
            diagnoses = diagnoses.filter(created_at__gte=filters.created_after)
        if filters.created_before is not None:
            diagnoses = diagnoses.filter(created_at__lt=filters.created_before)
        if filters.q.strip():
            diagnoses = _searched(diagnoses, filters.q)
    return diagnoses.order_by("-created_at")


def get_diagnosis_for(actor: Actor, diagnosis_id: uuid.UUID | str, *, key: str = "") -> Diagnosis:
    """One diagnosis: with `key`, a visitor's whose link this is, while it lasts (whoever
    follows the link); without, one of the actor's organisation.

    404 whether the diagnosis does not exist, belongs to another organisation, or the key is
    wrong or expired.
    """
    if key:
        diagnoses = Diagnosis.objects.filter(
            organization__isnull=True,
            access_key_digest=access_key_digest(key),
            expires_at__gt=timezone.now(),
        )
    else:
        diagnoses = diagnoses_for(actor)
    try:
        return diagnoses.get(id=diagnosis_id)
    except (Diagnosis.DoesNotExist, ValueError, TypeError):
        raise Http404("No such diagnosis.") from None


def stored_result(diagnosis: Diagnosis) -> DiagnosisResult | None:
    """The typed result stored on the row, None until the match stage has stored one.

    Rows stored before the result carried its masking counts take them from their column.
    Raises msgspec.ValidationError for a stored result that does not fit the type.
    """
    if not diagnosis.result:
        return None
    return result_from_json({"masking": diagnosis.masking_counts, **diagnosis.result})


def diagnosis_result(diagnosis: Diagnosis) -> DiagnosisResult | None:
    """The result the API and the pages show: only once the diagnosis is done."""
    if diagnosis.status != Diagnosis.Status.DONE:
        return None
    return stored_result(diagnosis)


# The longest a reader may wait for a diagnosis to finish (GET …?wait=N), and how often the wait
# looks at the row: the pipeline takes seconds, so a quarter to half a second of delay is noise.
MAX_WAIT_SECONDS = 30
POLL_FIRST_SECONDS = 0.25
POLL_MAX_SECONDS = 0.5


def is_waiting(diagnosis: Diagnosis) -> bool:
    """Whether a long poll on the diagnosis would wait: it is neither done nor failed."""
    from diagnosis.pipeline.table import is_active

    return is_active(diagnosis.status)


def wait_until_finished(diagnosis: Diagnosis, *, seconds: float) -> Diagnosis:
    """The diagnosis once it is done or failed, or as it is after `seconds` (at most
    MAX_WAIT_SECONDS).

    Each poll reads the status column alone in its own autocommit statement, so no transaction
    (no snapshot, no lock) is held while waiting, and a commit by a worker is seen at the next
    poll. The connection stays open between polls: it would be reopened twice a second otherwise,
    and the request holds its worker thread, and so that thread's connection, either way.
    """
    deadline = time.monotonic() + min(max(seconds, 0.0), MAX_WAIT_SECONDS)
    pause = POLL_FIRST_SECONDS
    # Imported here: the stage table's runners read this module (stored_result).
    from diagnosis.pipeline.table import is_active

    status = diagnosis.status
    while is_active(status):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if not connection.in_atomic_block:
            # Only when nothing else of the request's is in flight: a broken or expired
            # connection is replaced rather than failing the next poll.
            connection.close_if_unusable_or_obsolete()
        time.sleep(min(pause, left))
        pause = POLL_MAX_SECONDS
        current = Diagnosis.objects.filter(pk=diagnosis.pk).values_list("status", flat=True)
        status = current.first() or ""
        if not status:  # deleted meanwhile
            raise Http404("No such diagnosis.")
    if status != diagnosis.status:
        diagnosis.refresh_from_db()
    return diagnosis
