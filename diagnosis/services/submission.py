"""Submission of a log (intake): refuse what is not a log or is over quota, stage the raw bytes,
charge the unit and create the row together, enqueue the pipeline after commit. A repeated
Idempotency-Key answers the first diagnosis instead."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain
from typing import Protocol, TypedDict

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.actors import Actor, actor_for_person
from accounts.services import create_personal_organization
from billing_tiers.entitlements import Entitlements
from billing_tiers.errors import QuotaExceeded
from billing_tiers.models import QuotaCharge
from billing_tiers.selectors import (
    QuotaStatus,
    entitlements_for,
    next_reset,
    quota_subject,
    utc_day,
)
from billing_tiers.services import charge_quota, charge_quota_creating, check_quota
from diagnosis.bundles import checked_bundle, staged_limit
from diagnosis.masking import masking_secret
from diagnosis.metrics import QUOTA_REFUSALS
from diagnosis.models import Diagnosis
from diagnosis.selectors import (
    SubmissionFacts,
    access_key_digest,
    idempotency_key_digest,
    submission_facts,
)
from diagnosis.services.enqueue import keep_and_enqueue
from diagnosis.staging import (
    RAW,
    StagingStore,
    get_store,
    staging_key,
)
from plumbing import sql
from plumbing.problems import (
    ApplicationError,
    Conflict,
    PayloadTooLarge,
    ServiceUnavailable,
    Unprocessable,
)
from plumbing.text import one_line
from rootcause.intake import not_a_log
from rootcause.masking import Masker
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.masking.recognizer import shared_analyzer
from rootcause.masking.rules import Rule

logger = logging.getLogger(__name__)

Status = Diagnosis.Status
Kind = Diagnosis.Kind


class LogRejected(ApplicationError):
    title = "Log rejected"


def _limited(chunks: Iterable[bytes], limit: int) -> Iterable[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise PayloadTooLarge(f"The log is larger than the limit of {limit} bytes.")
        yield chunk


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


def _masked_filename(filename: str, masker: Masker | None) -> str:
    """The name is shown back to the user: only its last component, on one line with no
    direction-changing or invisible characters (plumbing/text.py), masked like the log (with no
    masker: one it was found to need none of, `_masked_names`)."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return _mask(one_line(base), masker)[:255]


@dataclass(frozen=True)
class JobMetadata:
    """What a CI job says about itself; shown in the history beside the file name."""

    job: str = ""
    run_url: str = ""
    commit: str = ""
    labels: tuple[str, ...] = ()


class MaskedMetadata(TypedDict):
    """The CI metadata's columns of a Diagnosis, as stored."""

    job: str
    run_url: str
    commit: str
    labels: list[str]


class VisitorColumns(TypedDict, total=False):
    """The columns only a visitor's (organisation-less) diagnosis fills."""

    anonymous_subject: str | None
    access_key_digest: str
    expires_at: datetime


class _Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


# (file name, metadata, the organisation's rules, the operator's recognizers) that a masker found
# nothing in: at most this many, the oldest forgotten first.
_MAX_CLEAN_NAMES = 512
_clean_names: OrderedDict[tuple[object, ...], None] = OrderedDict()


def _masked_names(
    diagnosis_id: uuid.UUID, filename: str, metadata: JobMetadata, rules: list[Rule]
) -> tuple[str, MaskedMetadata]:
    """The file name and CI metadata as stored (`_masked_filename`, `_masked_metadata`).

    Most submissions send the same few names (`train.log`, a job's name) over and over, and a
    masker is made and run on them each time. What it finds depends on the names, the rules and
    the recognizers alone; only its pseudonyms depend on the diagnosis (its secret). So a set of
    names in which a masker found nothing is remembered, and the next submission with the same
    names and rules stores them as they are without making a masker: what the masker would have
    given. A set with anything masked is masked anew every time, with its diagnosis' secret."""
    key = (filename, metadata, tuple(rules), settings.MASKING_RECOGNIZERS_FILE)
    if key in _clean_names:
        return _masked_filename(filename, None), _masked_metadata(metadata, None)
    masker = _masker_of_names(diagnosis_id, rules)
    names = _masked_filename(filename, masker), _masked_metadata(metadata, masker)
    if not masker.counts:
        if len(_clean_names) >= _MAX_CLEAN_NAMES:
            _clean_names.popitem(last=False)
        _clean_names[key] = None
    return names


def _masked_metadata(metadata: JobMetadata, masker: Masker | None) -> MaskedMetadata:
    """The metadata as stored: masked like the log (a job name or a URL may hold a host or a
    user name), on one line with no direction-changing or invisible characters (each is shown
    to others: plumbing/text.py), cut to the columns' lengths (a pseudonym may be longer)."""
    return {
        "job": _mask(one_line(metadata.job), masker)[:200],
        "run_url": _mask(one_line(metadata.run_url), masker)[:500],
        "commit": _mask(one_line(metadata.commit), masker)[:100],
        "labels": [_mask(label, masker)[:100] for label in map(one_line, metadata.labels) if label],
    }


def _mask(text: str, masker: Masker | None) -> str:
    return text if masker is None else masker.mask(text)


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


def _hashed(chunks: Iterable[bytes], hasher: _Hasher) -> Iterator[bytes]:
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
    facts: SubmissionFacts | None = None,
) -> Submission:
    """Accepts a log: charges a unit of the actor's daily quota and creates the row in one
    transaction, stages the raw bytes, enqueues the pipeline after commit.

    A repeated Idempotency-Key (within IDEMPOTENCY_WINDOW) returns the first diagnosis unchanged
    and charges nothing, if the log is the same (KeyReused, 422, if not; the log is read to
    compare its digest, never staged). A visitor's diagnosis belongs to no organisation: it is
    reachable by the link with the returned access key until ANONYMOUS_RESULT_HOURS have passed.
    `facts`: the organisation's submission facts if the caller read them already (with the API
    token: diagnosis.selectors.token_with_submission_facts); read here otherwise.
    """
    return _submit(
        actor,
        chunks,
        _Intake(source, filename, metadata or JobMetadata(), idempotency_key, Kind.LOG),
        facts,
    )


def submit_bundle(
    *,
    actor: Actor,
    files: list[tuple[str, bytes]],
    source: str,
    filename: str = "",
    metadata: JobMetadata | None = None,
    idempotency_key: str = "",
    facts: SubmissionFacts | None = None,
) -> Submission:
    """Accepts a bundle, one job's per-rank files ((name, bytes) each, or one archive), as one
    diagnosis: checked against the bundle limits first (diagnosis/bundles.py: 400 or 413,
    nothing charged), then charged, staged (as one archive) and enqueued like a log. Its
    pipeline masks every file, then analyses the hang (diagnosis/pipeline/table.py). `facts`
    as submit_diagnosis'."""
    bundle = checked_bundle(files)
    intake = _Intake(
        source, filename or bundle.name, metadata or JobMetadata(), idempotency_key, Kind.BUNDLE
    )
    return _submit(actor, bundle.chunks, intake, facts)


@dataclass(frozen=True)
class _Intake:
    """What a submission says besides its bytes."""

    source: str
    filename: str
    metadata: JobMetadata
    idempotency_key: str
    kind: str

    @property
    def max_bytes(self) -> int:
        return staged_limit() if self.kind == Kind.BUNDLE else _max_bytes()


def _submit(
    actor: Actor, chunks: Iterable[bytes], intake: _Intake, facts: SubmissionFacts | None = None
) -> Submission:
    key_digest = idempotency_key_digest(intake.idempotency_key) if intake.idempotency_key else ""
    existing = _by_idempotency_key(actor, key_digest) if key_digest else None
    if existing is not None:
        return _repeated(actor, existing, _digest_of(_limited(chunks, intake.max_bytes)))
    log = _refusing_what_is_not_a_log(chunks) if intake.kind == Kind.LOG else chunks
    actor = _acting_for_an_organization(actor)
    # Refused before staging: an upload over quota is never copied to Redis. The unit is charged
    # later, with the row.
    entitlements, masking_rules = _within_quota(actor, facts)
    draft = _Draft.new(
        actor,
        source=intake.source,
        filename=intake.filename,
        metadata=intake.metadata,
        key_digest=key_digest,
        masking_rules=masking_rules,
        kind=intake.kind,
    )
    return _stage_and_create(draft, log, entitlements, max_bytes=intake.max_bytes)


def _max_bytes() -> int:
    return int(settings.ROOTCAUSE_MAX_LOG_BYTES)


def _refusing_what_is_not_a_log(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The log's chunks, its first one read now: an empty or binary upload is refused (400)
    before anything is charged or staged."""
    iterator = iter(chunks)
    first = next((c for c in iterator if c), b"")
    if not first:
        raise LogRejected("The log is empty.")
    reason = not_a_log(first)
    if reason:
        raise LogRejected(f"The log {reason}.")
    return chain([first], iterator)


def _within_quota(
    actor: Actor, facts: SubmissionFacts | None = None
) -> tuple[Entitlements, list[Rule]]:
    """The actor's tier and its organisation's masking rules, once the quota check passed.

    The tier once for the check, the charge and the answer's quota headers: it takes queries.
    An organisation's tier facts, masking rules and quota use are read in one statement, or were
    read with the API token (`facts`, used if they are of this organisation and day)."""
    used_today: int | None = None
    masking_rules: list[Rule] = []
    if actor.organization is None:
        entitlements = entitlements_for(actor)
    else:
        day = utc_day(timezone.now())
        if facts is None or facts.organization_id != actor.organization.pk or facts.day != day:
            facts = submission_facts(
                actor.organization, quota_subject=quota_subject(actor), day=day
            )
        entitlements = entitlements_for(actor, standing=facts.standing)
        used_today, masking_rules = facts.used_today, facts.masking_rules
    try:
        check_quota(actor=actor, entitlements=entitlements, used=used_today)
    except QuotaExceeded:
        QUOTA_REFUSALS.inc()
        raise
    return entitlements, masking_rules


@dataclass(frozen=True)
class _Draft:
    """A new diagnosis as the request describes it, before its log is staged (the staging key
    names its id). A visitor's has an access key, given out once, and the columns that go with
    it."""

    actor: Actor
    source: str
    filename: str
    metadata: JobMetadata
    key_digest: str
    masking_rules: list[Rule]
    id: uuid.UUID
    kind: str = Kind.LOG
    access_key: str = ""
    visitor: VisitorColumns = field(default_factory=lambda: VisitorColumns())

    @classmethod
    def new(
        cls,
        actor: Actor,
        *,
        source: str,
        filename: str,
        metadata: JobMetadata,
        key_digest: str,
        masking_rules: list[Rule],
        kind: str = Kind.LOG,
    ) -> _Draft:
        access_key = ""
        visitor: VisitorColumns = {}
        if actor.organization is None:
            access_key = secrets.token_urlsafe(24)
            visitor = {
                "anonymous_subject": actor.anonymous_subject,
                "access_key_digest": access_key_digest(access_key),
                "expires_at": timezone.now() + timedelta(hours=settings.ANONYMOUS_RESULT_HOURS),
            }
        return cls(
            actor,
            source=source,
            filename=filename,
            metadata=metadata,
            key_digest=key_digest,
            masking_rules=masking_rules,
            id=uuid.uuid4(),
            kind=kind,
            access_key=access_key,
            visitor=visitor,
        )

    def row(self, *, size: int, body_digest: str) -> Diagnosis:
        """The row as it will be created (not saved: the charge creates it). The file name and
        CI metadata are masked like the log, with the organisation's rules."""
        filename, metadata = _masked_names(
            self.id, self.filename, self.metadata, self.masking_rules
        )
        return Diagnosis(
            id=self.id,
            organization=self.actor.organization,
            created_by=self.actor.user if self.actor.is_person else None,
            source=self.source,
            kind=self.kind,
            filename=filename,
            **metadata,
            size_bytes=size,
            idempotency_key_digest=self.key_digest,
            body_digest=body_digest,
            **self.visitor,
        )


def _stage_and_create(
    draft: _Draft, log: Iterable[bytes], entitlements: Entitlements, *, max_bytes: int
) -> Submission:
    """Stages the log, then charges the unit and creates the row together; the answer. A racing
    duplicate of an Idempotency-Key that committed first is answered instead, and whatever this
    one staged is deleted, as on any error."""
    actor, key_digest = draft.actor, draft.key_digest
    store = get_store(settings.REDIS_URL)
    raw_key = staging_key(RAW, draft.id)
    body_digest = ""
    try:
        size, body_digest = _stage_raw(store, raw_key, log, max_bytes)
        diagnosis = draft.row(size=size, body_digest=body_digest)
        charge, earlier = _charge_and_create(diagnosis, actor, entitlements, key_digest, raw_key)
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
    return Submission(
        diagnosis,
        created=True,
        actor=actor,
        access_key=draft.access_key,
        entitlements=entitlements,
        quota=_quota_after(charge, entitlements),
    )


def _stage_raw(
    store: StagingStore, raw_key: str, log: Iterable[bytes], max_bytes: int
) -> tuple[int, str]:
    """Streams the log into the staging store; its size and digest, taken as it streams.
    413 past the size limit, 503 with Redis away."""
    hasher = hashlib.sha256()
    try:
        # A short TTL until the row commits (diagnosis/staging.py): a process killed
        # mid-upload leaves no raw log behind for long.
        size = store.write(
            raw_key,
            _hashed(_limited(log, max_bytes), hasher),
            ttl_seconds=settings.STAGING_PENDING_TTL_SECONDS,
        )
    except redis.RedisError:
        logger.warning("could not stage a log: Redis is unavailable")
        raise ServiceUnavailable() from None
    return size, hasher.hexdigest()


def _charge_and_create(
    diagnosis: Diagnosis,
    actor: Actor,
    entitlements: Entitlements,
    key_digest: str,
    raw_key: str,
) -> tuple[QuotaCharge, Diagnosis | None]:
    """Charges the unit and creates the row together, the pipeline enqueued after commit.
    Returns the charge and, when an Idempotency-Key's first diagnosis turned out to exist
    (a racing duplicate that committed first), that diagnosis instead of a new row."""
    earlier: Diagnosis | None = None
    if not key_digest:
        # The unit, its charge and the row together: one statement on PostgreSQL, committed
        # by itself (so the callback runs at once, unless a caller's transaction is open).
        charge = charge_quota_creating(diagnosis, actor=actor, entitlements=entitlements)
        transaction.on_commit(lambda: keep_and_enqueue(diagnosis.id, raw_key))
        return charge, None
    with transaction.atomic():
        # The quota ledger gets the key's digest too: no table holds the key itself.
        charge = charge_quota(
            actor=actor,
            reference=diagnosis.id,
            idempotency_key=key_digest,
            entitlements=entitlements,
        )
        if charge.reference != str(diagnosis.id):
            # The key's first charge, made for another diagnosis: a racing duplicate
            # that committed first, or one deleted or past its window since (then this
            # one is charged anew).
            earlier = _by_idempotency_key(actor, key_digest)
            if earlier is None:
                charge = charge_quota(
                    actor=actor, reference=diagnosis.id, entitlements=entitlements
                )
        if earlier is None:
            sql.insert(diagnosis)  # Diagnosis.objects.create, its statement made once
            transaction.on_commit(lambda: keep_and_enqueue(diagnosis.id, raw_key))
    return charge, earlier


def _quota_after(charge: QuotaCharge, entitlements: Entitlements) -> QuotaStatus | None:
    """The quota right after the charge, from the charge itself (None if unknown): the answer's
    headers need no other read."""
    if charge.used_today is None:
        return None
    limit = entitlements.daily_diagnoses
    return QuotaStatus(
        tier=entitlements.tier,
        limit=limit,
        used=charge.used_today,
        remaining=max(0, limit - charge.used_today),
        reset=next_reset(timezone.now()),
    )
