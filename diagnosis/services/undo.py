"""Deleting a diagnosis from the history page, undoable for a short while.

The rows go at once (the diagnosis and everything that cascades from it: its feedback, its
follow-up questions, its webhook deliveries), as `delete_diagnosis` does; a finished diagnosis's
rows are first kept in the cache (Redis), serialized, for `DELETE_UNDO_SECONDS`, so that "Undo"
can put them back with the same ids. They hold what the database held (masked results, never a
log), and expire from the cache by themselves. The rows are collected as the admin's deletion
page collects them, through the models' relations, so this module names no other app.
"""

from __future__ import annotations

import uuid

from django.contrib.admin.utils import NestedObjects
from django.core import serializers
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, IntegrityError, transaction
from django.db.models import Model

from accounts.actors import Actor
from accounts.selectors import require_manager
from diagnosis.models import Diagnosis
from diagnosis.pipeline.stage import FINAL_STATUSES
from diagnosis.services.upkeep import delete_diagnosis
from plumbing.problems import ApplicationError, Conflict

# How long a deleted diagnosis can be put back.
DELETE_UNDO_SECONDS = 120


class UndoExpired(ApplicationError):
    status_code = 410
    title = "Undo expired"


def _key(organization_id: object, diagnosis_id: object) -> str:
    return f"diagnosis:undo:{organization_id}:{diagnosis_id}"


def _rows(diagnosis: Diagnosis) -> list[Model]:
    """The diagnosis and every row its deletion takes, in an order they can be inserted in."""
    collector = NestedObjects(using=DEFAULT_DB_ALIAS)
    collector.collect([diagnosis])
    collector.sort()  # the order a delete runs in: dependants before what they point at
    rows: list[Model] = []
    for instances in reversed(list(collector.data.values())):
        rows.extend(instances)
    return rows


def delete_with_undo(*, actor: Actor, diagnosis: Diagnosis) -> bool:
    """Delete it (owners and admins); True when it can be undone for DELETE_UNDO_SECONDS."""
    organization = require_manager(actor)
    undoable = diagnosis.organization_id == organization.pk and diagnosis.status in FINAL_STATUSES
    if undoable:
        stash = serializers.serialize("json", _rows(diagnosis))
        cache.set(_key(organization.pk, diagnosis.pk), stash, DELETE_UNDO_SECONDS)
    delete_diagnosis(actor=actor, diagnosis=diagnosis)
    return undoable


def undo_delete(*, actor: Actor, diagnosis_id: uuid.UUID) -> None:
    """Put a deleted diagnosis back, with the same id, while its undo lasts."""
    organization = require_manager(actor)
    key = _key(organization.pk, diagnosis_id)
    stash = cache.get(key)
    if stash is None:
        raise UndoExpired(
            f"The deletion can be undone for {DELETE_UNDO_SECONDS // 60} minutes only; it is final."
        )
    try:
        with transaction.atomic():
            for row in serializers.deserialize("json", stash):
                row.save()
    except IntegrityError:
        raise Conflict("The diagnosis cannot be put back: its organisation changed.") from None
    cache.delete(key)
