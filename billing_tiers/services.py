"""Writes: charging and refunding the daily quota, issuing, requesting and redeeming evaluations."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Model
from django.utils import timezone

from accounts import selectors as accounts_selectors
from accounts.actors import Actor
from accounts.models import Organization
from billing_tiers import emails
from billing_tiers.codes import MalformedCode, code_digest, generate_code
from billing_tiers.entitlements import Entitlements, active_evaluation, upgrade_from
from billing_tiers.errors import (
    CodeExpired,
    CodeInvalid,
    CodeUsed,
    EvaluationActive,
    NotVerifiedWorkplace,
    QuotaExceeded,
    RequestAlreadyDecided,
    RequestAlreadyOpen,
)
from billing_tiers.models import (
    Evaluation,
    EvaluationCode,
    EvaluationRequest,
    QuotaCharge,
    QuotaUsage,
)
from billing_tiers.selectors import (
    QuotaStatus,
    charge_for,
    entitlements_for,
    next_reset,
    quota_status,
    quota_subject,
    rate_limit_headers,
    utc_day,
)
from billing_tiers.tiers import evaluation_tier
from plumbing import sql
from plumbing.problems import ApplicationError
from plumbing.text import several_lines

logger = logging.getLogger(__name__)

# --- The daily quota ----------------------------------------------------------------------------


def _quota_exceeded(entitlements: Entitlements, now: datetime) -> QuotaExceeded:
    status = QuotaStatus(
        tier=entitlements.tier,
        limit=entitlements.daily_diagnoses,
        used=entitlements.daily_diagnoses,
        remaining=0,
        reset=next_reset(now),
    )
    seconds = status.seconds_to_reset()
    hours, minutes = divmod(-(-seconds // 60), 60)
    detail = (
        f"The {entitlements.tier} tier allows {status.limit} diagnoses a day and today's "
        f"are used. The quota resets at {status.reset:%Y-%m-%d %H:%M} UTC, in {hours} h "
        f"{minutes:02d} min."
    )
    upgrade = upgrade_from(entitlements)
    if upgrade is not None:
        detail += f" {upgrade.how} for {upgrade.daily_diagnoses} a day."
    return QuotaExceeded(
        detail,
        extra={
            "tier": entitlements.tier,
            "limit": status.limit,
            "remaining": 0,
            "reset": status.reset.isoformat().replace("+00:00", "Z"),
            "retry_after": seconds,
            "upgrade": None
            if upgrade is None
            else {
                "tier": upgrade.tier,
                "daily_diagnoses": upgrade.daily_diagnoses,
                "how": upgrade.how,
            },
        },
        headers={"Retry-After": str(seconds), **rate_limit_headers(status)},
    )


def check_quota(
    *, actor: Actor, entitlements: Entitlements | None = None, used: int | None = None
) -> QuotaStatus:
    """Today's quota of the actor; raises QuotaExceeded (429, worded, with its headers) when
    nothing is left. Charges nothing: callers check before costly work, then charge_quota.
    `entitlements` and today's `used`, when the caller has read them already: working out the
    tier takes queries."""
    entitlements = entitlements or entitlements_for(actor)
    status = quota_status(actor, entitlements=entitlements, used=used)
    if status.remaining <= 0:
        raise _quota_exceeded(entitlements, timezone.now())
    return status


def charge_quota(
    *,
    actor: Actor,
    reference: str | uuid.UUID = "",
    idempotency_key: str = "",
    entitlements: Entitlements | None = None,
) -> QuotaCharge:
    """Takes one unit of the actor's allowance for today (UTC), or raises QuotaExceeded (429).

    Call it inside the transaction that creates what is charged for (the diagnosis): if that
    transaction rolls back, no unit was taken. `reference` (the diagnosis id) lets the pipeline
    find the charge to refund. Exact under concurrency on PostgreSQL: one upsert (`_take_unit`)
    increments the usage row only while `used < limit`; concurrent charges queue on its row lock
    and each re-checks the condition against the committed count. The returned charge's
    `used_today` is the day's count right after it (for the answer's quota headers).

    With an `idempotency_key`, a second charge of the same subject and key returns the first
    charge (the same row) instead of taking another unit, even when the two race: the second
    insert waits for the first transaction and then finds its row.
    """
    entitlements = entitlements or entitlements_for(actor)
    subject = quota_subject(actor)
    now = timezone.now()
    day = utc_day(now)
    key = idempotency_key[:255]
    if key:
        existing = QuotaCharge.objects.filter(subject=subject, idempotency_key=key).first()
        if existing is not None:
            return existing
    if entitlements.daily_diagnoses <= 0:
        raise _quota_exceeded(entitlements, now)
    if not key:
        charge = _new_charge(subject, day, entitlements, reference, key)
        if not _take_unit_saving(charge, entitlements.daily_diagnoses):
            raise _quota_exceeded(entitlements, now)
        return charge
    try:
        # With a key, a savepoint inside the caller's transaction: a lost race (the other
        # request's charge of the same key) or a refusal leaves nothing behind even if the caller
        # catches the error and carries on. The charge is written first, as the refund does, so
        # the two take their locks in the same order.
        with transaction.atomic():
            charge = _record_charge(subject, day, entitlements, reference, key, None)
            used = _take_unit(subject, day, entitlements.daily_diagnoses)
            if used is None:
                raise _quota_exceeded(entitlements, now)
            charge.used_today = used
    except IntegrityError:
        existing = QuotaCharge.objects.filter(subject=subject, idempotency_key=key).first()
        if existing is None:
            raise
        return existing
    return charge


def charge_quota_creating(
    row: Model, *, actor: Actor, entitlements: Entitlements | None = None
) -> QuotaCharge:
    """`charge_quota` without an Idempotency-Key, saving `row` (new; the charge's reference is its
    primary key) with the unit: both or neither. Raises QuotaExceeded, having saved nothing, when
    none is left.

    On PostgreSQL this is one statement (`_charge_creating_sql`): the unit's upsert, with the
    charge's INSERT and the row's in data-modifying CTEs that select from the upsert's RETURNING,
    so that they add their rows only if it took a unit. Outside a transaction it is a transaction
    of its own: one round trip where the three statements in a transaction take five (BEGIN and
    COMMIT besides), on the path every submission without a key takes. Elsewhere (SQLite, the
    embedded mode, has no data-modifying CTEs) the three statements in one transaction.
    """
    entitlements = entitlements or entitlements_for(actor)
    subject = quota_subject(actor)
    now = timezone.now()
    day = utc_day(now)
    limit = entitlements.daily_diagnoses
    if limit <= 0:
        raise _quota_exceeded(entitlements, now)
    charge = _new_charge(subject, day, entitlements, row.pk, "")
    if connection.vendor != "postgresql":
        _take_unit_saving(charge, limit, row)
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                _charge_creating_sql(type(row)),
                [subject, day, limit, *sql.insert_values(charge), *sql.insert_values(row)],
            )
            found = cursor.fetchone()
        charge.used_today = None if found is None else int(found[0])
        if charge.used_today is not None:
            sql.saved(charge)
            sql.saved(row)
    if charge.used_today is None:
        raise _quota_exceeded(entitlements, now)
    return charge


def _new_charge(
    subject: str, day: date, entitlements: Entitlements, reference: str | uuid.UUID, key: str
) -> QuotaCharge:
    return QuotaCharge(
        subject=subject,
        day=day,
        tier=entitlements.tier,
        reference=str(reference),
        idempotency_key=key,
    )


def _record_charge(
    subject: str,
    day: date,
    entitlements: Entitlements,
    reference: str | uuid.UUID,
    key: str,
    used: int | None,
) -> QuotaCharge:
    charge = _new_charge(subject, day, entitlements, reference, key)
    sql.insert(charge)  # QuotaCharge.objects.create, its statement made once (every submission)
    charge.used_today = used
    return charge


def _take_unit_saving(charge: QuotaCharge, limit: int, *rows: Model) -> bool:
    """Takes the unit of the charge's subject and day, then saves the charge and `rows`; False,
    having written nothing, when none is left. The charge's `used_today` is the day's count.

    No savepoint: the unit is taken first, and a refusal has written nothing, so it leaves the
    caller's transaction usable. The INSERTs cannot conflict (the charge's reference is new), and
    if one fails anyway the caller's transaction rolls back with the unit.
    """
    with transaction.atomic(savepoint=False):
        charge.used_today = _take_unit(charge.subject, charge.day, limit)
        if charge.used_today is None:
            return False
        for saved in (charge, *rows):
            sql.insert(saved)  # Model.objects.create, its statement made once (every submission)
    return True


def _take_unit(subject: str, day: date, limit: int) -> int | None:
    """One statement takes the unit and returns the day's new count, or None when none is left.

    It creates the day's row with the first charge, or adds one while `used < limit`. On a
    conflict PostgreSQL locks the row and checks the condition against its latest committed
    version, so concurrent charges queue on the row and none passes the limit; a refusal writes
    nothing. The count it returns is what the answer's quota headers tell, with no other read.
    """
    with connection.cursor() as cursor:
        cursor.execute(_CHARGE_SQL, [subject, day, limit])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


# QuotaUsage's table, spelt out (a literal, never built from names).
_CHARGE_SQL = (
    'INSERT INTO "billing_tiers_quotausage" ("subject", "day", "used") VALUES (%s, %s, 1) '
    'ON CONFLICT ("subject", "day") DO UPDATE SET "used" = "billing_tiers_quotausage"."used" + 1 '
    'WHERE "billing_tiers_quotausage"."used" < %s RETURNING "used"'
)


@cache
def _charge_creating_sql(model: type[Model]) -> str:
    """_CHARGE_SQL's upsert, then the charge's and the row's INSERT … SELECT … FROM unit: one row
    each when the upsert returned the day's count, none when it refused."""
    charge = sql.insert_selecting(QuotaCharge, "unit")
    created = sql.insert_selecting(model, "unit")
    return (
        f"WITH unit AS ({_CHARGE_SQL}), charge AS ({charge}), created AS ({created}) "  # noqa: S608 - statements made of names only
        'SELECT "used" FROM unit'
    )


def refund_quota(*, charge: QuotaCharge) -> bool:
    """Gives the unit back to the day it was charged to, once; False if it was already refunded.

    A unit charged yesterday and refunded today goes back to yesterday, which no longer counts.
    """
    with transaction.atomic():
        refunded = QuotaCharge.objects.filter(pk=charge.pk, refunded_at__isnull=True).update(
            refunded_at=timezone.now()
        )
        if refunded:
            QuotaUsage.objects.filter(subject=charge.subject, day=charge.day, used__gt=0).update(
                used=F("used") - 1
            )
    return refunded == 1


def refund_quota_for(*, reference: str | uuid.UUID) -> bool:
    """Refunds the charge made for `reference` (a diagnosis id) once; False if none or done."""
    charge = charge_for(reference=reference)
    return charge is not None and refund_quota(charge=charge)


def purge_quota_ledger() -> int:
    """Deletes usage rows and charges older than QUOTA_LEDGER_DAYS (a daily beat task)."""
    cutoff = utc_day(timezone.now()) - timedelta(days=settings.QUOTA_LEDGER_DAYS)
    usage, _ = QuotaUsage.objects.filter(day__lt=cutoff).delete()
    charges, _ = QuotaCharge.objects.filter(day__lt=cutoff).delete()
    return usage + charges


# --- Evaluation codes ---------------------------------------------------------------------------

MAX_CODES_PER_BATCH = 1000


@dataclass(frozen=True)
class IssuedCode:
    row: EvaluationCode
    code: str  # in clear: shown or e-mailed once, never stored


def issue_evaluation_codes(
    *,
    count: int,
    days: int | None = None,
    daily_limit: int | None = None,
    redeem_by: date | None = None,
    created_by: User | None = None,
    note: str = "",
) -> list[IssuedCode]:
    """Mints `count` single-use codes; only their keyed hashes are stored."""
    days = settings.EVALUATION_DAYS if days is None else days
    daily_limit = evaluation_tier().daily_diagnoses if daily_limit is None else daily_limit
    today = utc_day(timezone.now())
    redeem_by = redeem_by or today + timedelta(days=settings.EVALUATION_CODE_VALID_DAYS)
    if not 1 <= count <= MAX_CODES_PER_BATCH:
        raise ApplicationError(f"Issue between 1 and {MAX_CODES_PER_BATCH} codes at a time.")
    if days < 1 or daily_limit < 1:
        raise ApplicationError("Days and the daily allowance must be at least 1.")
    if redeem_by < today:
        raise ApplicationError("The redeem-by date is in the past.")
    codes = [generate_code() for _ in range(count)]
    rows = EvaluationCode.objects.bulk_create(
        [
            EvaluationCode(
                digest=code_digest(code),
                days=days,
                daily_limit=daily_limit,
                redeem_by=redeem_by,
                created_by=created_by,
                note=note[:200],
            )
            for code in codes
        ]
    )
    logger.info("issued %d evaluation codes (%d days, %d a day)", count, days, daily_limit)
    return [IssuedCode(row=row, code=code) for row, code in zip(rows, codes, strict=True)]


def _require_verified_workplace(organization: Organization) -> None:
    if not accounts_selectors.workplace_domain(organization):
        raise NotVerifiedWorkplace(
            "Scale evaluations are for verified workplaces: verify your organisation's e-mail "
            "domain first (an owner or admin with an address at that domain)."
        )


def _refuse_if_active(organization: Organization) -> None:
    current = active_evaluation(organization)
    if current is not None:
        raise EvaluationActive(
            f"{organization.name} is on Scale until {current.ends_at:%Y-%m-%d %H:%M} UTC.",
            extra={"ends_at": current.ends_at.isoformat().replace("+00:00", "Z")},
        )


def request_evaluation(*, actor: Actor, training: str, team_size: int) -> EvaluationRequest:
    """An owner or admin of a verified workplace asks staff for a code; one open at a time."""
    organization = accounts_selectors.require_manager(actor)
    # Read by staff: its lines kept, no controls or direction-changing characters.
    training = several_lines(training)
    if not training:
        raise ApplicationError("Say what you train.")
    _require_verified_workplace(organization)
    _refuse_if_active(organization)
    if EvaluationRequest.objects.filter(
        organization=organization, status=EvaluationRequest.Status.OPEN
    ).exists():
        raise _already_open()
    try:
        with transaction.atomic():
            request = EvaluationRequest.objects.create(
                organization=organization,
                requested_by=actor.user,
                training=training,
                team_size=team_size,
            )
    except IntegrityError:
        # A concurrent request of the same organisation won (evaluation_request_one_open_per_org).
        raise _already_open() from None
    transaction.on_commit(lambda: _tell_staff(request))
    return request


def _tell_staff(request: EvaluationRequest) -> None:
    """Once the request is committed; a mail outage must not turn the request into a 500."""
    try:
        emails.send_request_arrived(request=request)
    except Exception:
        logger.exception("Could not e-mail staff about evaluation request %s", request.pk)


def _already_open() -> RequestAlreadyOpen:
    return RequestAlreadyOpen(
        "Your organisation already has an open request; staff will answer it by e-mail."
    )


def _requester_addresses(request: EvaluationRequest) -> list[str]:
    """The requester, or the organisation's managers if the requester's account is gone."""
    if request.requested_by is not None and request.requested_by.email:
        return [request.requested_by.email]
    return [user.email for user in accounts_selectors.managers_of(request.organization)]


def approve_evaluation_request(
    *,
    request_id: uuid.UUID | str,
    decided_by: User | None,
    days: int | None = None,
    daily_limit: int | None = None,
) -> EvaluationRequest:
    """Issues a code for an open request and e-mails it to the requester (staff, in the admin)."""
    with transaction.atomic():
        issued = issue_evaluation_codes(
            count=1,
            days=days,
            daily_limit=daily_limit,
            created_by=decided_by,
            note=f"request {request_id}",
        )[0]
        approved = EvaluationRequest.objects.filter(
            id=request_id, status=EvaluationRequest.Status.OPEN
        ).update(
            status=EvaluationRequest.Status.APPROVED,
            code=issued.row,
            decided_at=timezone.now(),
            decided_by=decided_by,
        )
        if not approved:
            raise RequestAlreadyDecided("This request is no longer open.")
        request = EvaluationRequest.objects.select_related(
            "organization", "requested_by", "code"
        ).get(id=request_id)
        # Sent inside the transaction on purpose: the code exists only in this e-mail, so if
        # sending fails the approval rolls back and the request stays open for another try.
        emails.send_evaluation_code(
            request=request, code=issued.code, recipients=_requester_addresses(request)
        )
    logger.info("evaluation request %s approved", request_id)
    return request


def decline_evaluation_request(
    *, request_id: uuid.UUID | str, decided_by: User | None, reason: str
) -> EvaluationRequest:
    reason = reason.strip()
    if not reason:
        raise ApplicationError("Say why the request is declined; the requester reads it.")
    with transaction.atomic():
        declined = EvaluationRequest.objects.filter(
            id=request_id, status=EvaluationRequest.Status.OPEN
        ).update(
            status=EvaluationRequest.Status.DECLINED,
            decline_reason=reason,
            decided_at=timezone.now(),
            decided_by=decided_by,
        )
        if not declined:
            raise RequestAlreadyDecided("This request is no longer open.")
        request = EvaluationRequest.objects.select_related("organization", "requested_by").get(
            id=request_id
        )
        emails.send_request_declined(request=request, recipients=_requester_addresses(request))
    logger.info("evaluation request %s declined", request_id)
    return request


def redeem_evaluation_code(*, actor: Actor, code: str) -> Evaluation:
    """Puts the actor's organisation on Scale for the code's days, from now.

    Single use under concurrency: the code is claimed by a compare-and-set on `redeemed_at`
    (and the database allows one evaluation per code), and redemptions of one organisation are
    serialised on its row so that two different codes cannot open two windows at once.
    """
    organization = accounts_selectors.require_manager(actor)
    _require_verified_workplace(organization)
    try:
        digest = code_digest(code)
    except MalformedCode as exc:
        raise CodeInvalid(str(exc)) from None
    now = timezone.now()
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=organization.pk).exists()
        row = EvaluationCode.objects.filter(digest=digest).first()
        if row is None:
            raise CodeInvalid(
                "No evaluation code matches this one: check it, or ask for a new one."
            )
        if row.redeemed_at is not None:
            raise CodeUsed("This evaluation code has already been redeemed; each code works once.")
        if row.redeem_by < utc_day(now):
            raise CodeExpired(
                f"This evaluation code could be redeemed until {row.redeem_by:%Y-%m-%d}; "
                "request a new one."
            )
        _refuse_if_active(organization)
        claimed = EvaluationCode.objects.filter(pk=row.pk, redeemed_at__isnull=True).update(
            redeemed_at=now, redeemed_by=actor.user
        )
        if not claimed:
            raise CodeUsed("This evaluation code has already been redeemed; each code works once.")
        evaluation = Evaluation.objects.create(
            organization=organization,
            code=row,
            redeemed_by=actor.user,
            starts_at=now,
            ends_at=now + timedelta(days=row.days),
            daily_limit=row.daily_limit,
        )
    logger.info("organisation %s redeemed an evaluation code", organization.pk)
    return evaluation


def send_evaluation_ending_notices() -> int:
    """E-mails the managers of organisations whose evaluation ends within the notice period.

    Safe to run concurrently and repeatedly: each notice is taken by a compare-and-set on
    `ending_notice_sent_at` before it is sent, and given back if sending fails.
    """
    now = timezone.now()
    due = Evaluation.objects.filter(
        ending_notice_sent_at__isnull=True,
        starts_at__lte=now,
        ends_at__gt=now,
        ends_at__lte=now + timedelta(days=settings.EVALUATION_ENDING_NOTICE_DAYS),
    ).select_related("organization")
    sent = 0
    for evaluation in due[:500]:
        taken = Evaluation.objects.filter(
            pk=evaluation.pk, ending_notice_sent_at__isnull=True
        ).update(ending_notice_sent_at=now)
        if not taken:
            continue  # another run took it
        recipients = [u.email for u in accounts_selectors.managers_of(evaluation.organization)]
        try:
            emails.send_evaluation_ending(evaluation=evaluation, recipients=recipients)
        except Exception:
            Evaluation.objects.filter(pk=evaluation.pk, ending_notice_sent_at=now).update(
                ending_notice_sent_at=None
            )
            logger.exception("could not send the ending notice of evaluation %s", evaluation.pk)
            continue
        sent += 1
    return sent
