"""The one hook `diagnosis` offers the apps above it: a diagnosis has just finished.

An app that reacts to finished diagnoses (alerts writes its outbox rows) registers a callback in
its `AppConfig.ready()`; `services.complete_stage` runs every callback inside the transaction
that marks the diagnosis done, so what they write commits with the status or not at all. This
way `diagnosis` names none of the apps above it, and what happens on completion is one list,
not signals attached to models.

A callback must be cheap when it has nothing to do (it runs for every finished diagnosis, and
the completion's query count is pinned by tests/diagnosis/test_overhead.py), must not commit or
open its own connection, and must defer anything outside the database (a task message) to
`transaction.on_commit`. An exception in a callback rolls the completion back: the stage is then
retried or failed like any other error in it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

# A callback takes the diagnosis's id and its organisation's (None for a visitor's diagnosis),
# keyword-only; it returns nothing anyone reads.
FinishedCallback = Callable[..., object]

_finished: list[FinishedCallback] = []


def on_diagnosis_finished(callback: FinishedCallback) -> FinishedCallback:
    """Registers `callback(*, diagnosis_id, organization_id)` to run when a diagnosis finishes.
    Registering the same callback again does nothing (`ready()` may run more than once in tests)."""
    if callback not in _finished:
        _finished.append(callback)
    return callback


def diagnosis_finished(*, diagnosis_id: uuid.UUID, organization_id: uuid.UUID | None) -> None:
    """Runs every registered callback, in the order registered, in the caller's transaction."""
    for callback in _finished:
        callback(diagnosis_id=diagnosis_id, organization_id=organization_id)


def finished_callbacks() -> tuple[FinishedCallback, ...]:
    """The registered callbacks (for checks and tests)."""
    return tuple(_finished)
