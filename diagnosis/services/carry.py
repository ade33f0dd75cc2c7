"""A visitor's results carried into the account they then create (or sign in to).

A visitor's diagnosis belongs to nobody: it is reached by its link's key alone. The browser
session that submitted it on the web page remembers it (the id and the key's digest, never the
key); when that session signs up or signs in, Django's `user_logged_in` signal (connected in
`DiagnosisConfig.ready`) moves each one still there into the organisation the person now acts
for: it joins the history, its link's key and expiry go, and a finished one gets the fix its
new tier includes (stage 3 run again on the stored result). Diagnoses only opened by a link in
this session stay where they are: the link may be someone else's.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.contrib.sessions.backends.base import SessionBase
from django.db import transaction
from django.http import HttpRequest

from accounts.actors import actor_for_person
from billing_tiers.selectors import includes_fix_steps
from diagnosis.models import Diagnosis
from diagnosis.selectors import access_key_digest, stored_result
from encyclopedia.selectors import current_engine
from rootcause.remediation import complete_result
from rootcause.result import as_json

logger = logging.getLogger(__name__)

SESSION_VISITOR_DIAGNOSES = "visitor_diagnoses"
# A session remembers at most this many (a visitor has 3 a day; the oldest are forgotten first).
REMEMBERED = 20


def remember_visitor_diagnosis(session: SessionBase, diagnosis: Diagnosis, key: str) -> None:
    """Called when a visitor's web submission made `diagnosis`, reached with `key`."""
    remembered = [
        pair for pair in session.get(SESSION_VISITOR_DIAGNOSES, []) if pair[0] != str(diagnosis.id)
    ]
    remembered.append([str(diagnosis.id), access_key_digest(key)])
    session[SESSION_VISITOR_DIAGNOSES] = remembered[-REMEMBERED:]


def _with_fix(diagnosis: Diagnosis) -> None:
    """A finished diagnosis's stored result completed again for its new organisation's tier."""
    if diagnosis.status != Diagnosis.Status.DONE:
        return  # the pipeline's last stage will read the new organisation itself
    result = stored_result(diagnosis)
    if result is None:
        return
    slug = diagnosis.failure_slug
    diagnosis.result = as_json(
        complete_result(
            result,
            entry=current_engine().by_slug.get(slug) if slug else None,
            include_fix=includes_fix_steps(diagnosis.organization),
            masking=diagnosis.masking_counts,
        )
    )


def carry_visitor_diagnoses(session: SessionBase, user: User) -> int:
    """Move the session's remembered visitor diagnoses into the organisation `user` acts for;
    how many moved. Nothing moves for a person with no organisation."""
    remembered = session.pop(SESSION_VISITOR_DIAGNOSES, [])
    organization = actor_for_person(user).organization if remembered else None
    if organization is None:
        return 0
    moved = 0
    with transaction.atomic():
        for diagnosis_id, digest in remembered:
            diagnosis = (
                Diagnosis.objects.select_for_update()
                .filter(id=diagnosis_id, organization__isnull=True, access_key_digest=digest)
                .first()
            )
            if diagnosis is None:  # expired and purged, or carried already
                continue
            diagnosis.organization = organization
            diagnosis.created_by = user
            diagnosis.anonymous_subject = diagnosis.access_key_digest = ""
            diagnosis.expires_at = None
            _with_fix(diagnosis)
            diagnosis.save()
            moved += 1
    logger.info("carried %d visitor diagnoses into organisation %s", moved, organization.pk)
    return moved


def carry_on_login(sender: object, request: HttpRequest | None, user: User, **_: object) -> None:
    """`user_logged_in`'s receiver."""
    if request is not None and hasattr(request, "session"):
        carry_visitor_diagnoses(request.session, user)
