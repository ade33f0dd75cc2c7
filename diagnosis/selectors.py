"""Reads of diagnoses: an organisation's, scoped to the caller's, or a visitor's, by its link."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor
from diagnosis.models import Diagnosis
from rootcause.result import DiagnosisResult, result_from_json


def access_key_digest(key: str) -> str:
    """What is stored of a visitor's access key. The key is random (192 bits): a plain hash
    suffices, and a lookup by digest compares no secret byte by byte."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class HistoryFilters:
    failure: str = ""  # a failure class's slug
    status: str = ""
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive


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
