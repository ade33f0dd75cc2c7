"""Reads of diagnoses, always scoped to the caller's organisation."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from accounts.authentication import TokenUser
from accounts.models import Organization
from accounts.selectors import organization_for_user
from diagnosis.models import Diagnosis
from rootcause.result import DiagnosisResult, result_from_json


def organization_for(caller: Any) -> Organization | None:
    """The organisation a request acts for: the token's, or the signed-in person's."""
    if isinstance(caller, TokenUser):
        return caller.organization
    return organization_for_user(caller)


def diagnoses_for(caller: Any) -> QuerySet[Diagnosis]:
    organization = organization_for(caller)
    if organization is None:
        return Diagnosis.objects.none()
    return Diagnosis.objects.filter(organization=organization).order_by("-created_at")


def get_diagnosis_for(caller: Any, diagnosis_id: uuid.UUID | str) -> Diagnosis:
    """404 whether the diagnosis does not exist or belongs to another organisation."""
    try:
        return diagnoses_for(caller).get(id=diagnosis_id)
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
