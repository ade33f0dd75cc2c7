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

A callback may also say, in SQL, when it has nothing to do (`idle_when`: a condition on the
finished diagnosis's organisation). When every callback can say so, the completion first marks
the diagnosis done with one UPDATE that holds only under all those conditions, in autocommit: for
most diagnoses (an organisation without alerts) that is the whole completion, no transaction, no
lookup; where a condition fails, the transaction above runs the callbacks as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

# A callback takes the diagnosis's id and its organisation's (None for a visitor's diagnosis),
# keyword-only; it returns nothing anyone reads.
FinishedCallback = Callable[..., object]
# Given the SQL of the finished diagnosis's organisation id (a qualified column), a condition that
# holds when the callback would do nothing for it.
IdleWhen = Callable[[str], str]

_finished: list[FinishedCallback] = []
_idle_when: dict[FinishedCallback, IdleWhen] = {}


def on_diagnosis_finished(
    callback: FinishedCallback, *, idle_when: IdleWhen | None = None
) -> FinishedCallback:
    """Registers `callback(*, diagnosis_id, organization_id)` to run when a diagnosis finishes,
    and, with `idle_when`, the SQL condition under which it has nothing to do (it then need not
    run). Registering the same callback again does nothing (`ready()` may run more than once in
    tests)."""
    if callback not in _finished:
        _finished.append(callback)
        if idle_when is not None:
            _idle_when[callback] = idle_when
    return callback


def idle_sql(organization: str) -> str | None:
    """A SQL condition on `organization` (the finished diagnosis's organisation id, a qualified
    column) that holds when no callback has anything to do; None when a callback cannot say."""
    conditions = []
    for callback in _finished:
        idle_when = _idle_when.get(callback)
        if idle_when is None:
            return None
        conditions.append(f"({idle_when(organization)})")
    return " AND ".join(conditions) or "TRUE"


def diagnosis_finished(*, diagnosis_id: uuid.UUID, organization_id: uuid.UUID | None) -> None:
    """Runs every registered callback, in the order registered, in the caller's transaction."""
    for callback in _finished:
        callback(diagnosis_id=diagnosis_id, organization_id=organization_id)


def finished_callbacks() -> tuple[FinishedCallback, ...]:
    """The registered callbacks (for checks and tests)."""
    return tuple(_finished)
