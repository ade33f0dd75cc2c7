"""Giving a verdict on a diagnosis, and staff's review of it."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.actors import Actor
from accounts.selectors import masking_rules_of
from diagnosis.masking import masking_secret
from diagnosis.models import Diagnosis
from diagnosis.selectors import diagnosis_result
from encyclopedia.models import Entry
from feedback.models import Feedback
from plumbing.problems import ApplicationError, Conflict
from rootcause.masking import Masker
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.masking.recognizer import shared_analyzer

NOTE_MAX_CHARS = 1000
# What a corpus label says of a log with no failure (bench/eval.py counts it as healthy).
NO_FAILURE = "none"


class FeedbackRefused(ApplicationError):
    title = "Feedback refused"


@dataclass(frozen=True)
class Verdict:
    """What a person says of a diagnosis: right or not, the right class if they know it, a note."""

    right: bool
    correct_class: str = ""
    note: str = ""


def _masked_note(diagnosis: Diagnosis, note: str) -> str:
    """The note is free text a person typed beside a log: masked as the log's file name is, with
    the organisation's rules and the diagnosis's pseudonyms (a host in both reads the same)."""
    if not note.strip():
        return ""
    recognizers = settings.MASKING_RECOGNIZERS_FILE
    masker = Masker(
        secret=masking_secret(diagnosis.id),
        rules=masking_rules_of(diagnosis.organization_id),
        analyzer=shared_analyzer(recognizers) if recognizers else WHEN_NEEDED,
    )
    return masker.mask(note.strip())[:NOTE_MAX_CHARS]


def _checked(diagnosis: Diagnosis, verdict: Verdict) -> tuple[str, str]:
    """(the class diagnosed, the class the person says is right), or a 400/409 that says why not."""
    result = diagnosis_result(diagnosis)
    if result is None:
        raise Conflict("The diagnosis has no result yet: give feedback once it is done.")
    diagnosed = result.failure.slug if result.failure is not None else ""
    named = verdict.correct_class.strip()
    if len(verdict.note) > NOTE_MAX_CHARS:
        raise FeedbackRefused(f"The note is longer than {NOTE_MAX_CHARS} characters.")
    if verdict.right:
        if named and named != (diagnosed or NO_FAILURE):
            raise FeedbackRefused(
                "A right diagnosis names no other class: answer wrong to give the right one."
            )
        return diagnosed, diagnosed or NO_FAILURE
    if named and named == diagnosed:
        raise FeedbackRefused(
            f"{named} is the class diagnosed: answer right, or name another class."
        )
    if named and named != NO_FAILURE and not Entry.objects.filter(slug=named).exists():
        raise FeedbackRefused(
            f"{named!r} is no class of the catalogue: give one of the encyclopedia's slugs, or "
            f"{NO_FAILURE!r} for a run that did not fail."
        )
    if named == NO_FAILURE and not diagnosed:
        raise FeedbackRefused("No failure was diagnosed: answer right if the run did not fail.")
    return diagnosed, named


def give_feedback(*, actor: Actor, diagnosis: Diagnosis, verdict: Verdict) -> Feedback:
    """Record the verdict on a diagnosis the caller can read (the selectors decide who can):
    one per diagnosis, a later answer replacing the earlier and going back to staff's queue."""
    diagnosed, correct = _checked(diagnosis, verdict)
    fields = {
        "organization_id": diagnosis.organization_id,
        "given_by": actor.user,
        "verdict": Feedback.Verdict.RIGHT if verdict.right else Feedback.Verdict.WRONG,
        "diagnosed_slug": diagnosed,
        "correct_slug": correct,
        "note": _masked_note(diagnosis, verdict.note),
        "review": Feedback.Review.PENDING,
        "reviewed_by": None,
        "reviewed_at": None,
    }
    with transaction.atomic():
        feedback, _ = Feedback.objects.update_or_create(diagnosis=diagnosis, defaults=fields)
    return feedback


def review_feedback(*, feedback: list[Feedback], reviewer: object, accepted: bool) -> int:
    """Staff's decision on verdicts (the admin's actions): accepted ones join a corpus exported
    with --accepted-only, rejected ones are neither exported nor counted."""
    ids = [item.pk for item in feedback]
    return Feedback.objects.filter(pk__in=ids).update(
        review=Feedback.Review.ACCEPTED if accepted else Feedback.Review.REJECTED,
        reviewed_by=reviewer,
        reviewed_at=timezone.now(),
    )
