"""The one hook diagnosis offers the apps above it: the callbacks registered for a finished
diagnosis run once, when the last stage completes, inside the transaction that marks it done (what
they write commits with the status, or neither does); alerts is registered through it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from diagnosis import hooks, services
from diagnosis.models import Diagnosis
from diagnosis.pipeline.table import STAGES

pytestmark = pytest.mark.django_db

Status = Diagnosis.Status


def _run_every_stage(diagnosis: Diagnosis) -> bool:
    """Claims and completes each stage in turn; whether the last completion held."""
    completed = False
    for stage in STAGES:
        if diagnosis.kind not in stage.kinds:
            continue  # a bundle's analysis: a log passes it by
        claim = services.claim_stage(diagnosis_id=str(diagnosis.id), stage=stage.status)
        assert isinstance(claim, services.Claim)
        completed = services.complete_stage(claim)
    return completed


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A callback registered for the test only, recording each call and what it saw then."""
    seen: list[dict[str, Any]] = []

    def record(*, diagnosis_id: Any, organization_id: Any) -> None:
        seen.append(
            {
                "diagnosis_id": diagnosis_id,
                "organization_id": organization_id,
                "in_transaction": connection.in_atomic_block,
                # The row as this transaction wrote it: already done.
                "status": Diagnosis.objects.get(id=diagnosis_id).status,
            }
        )

    monkeypatch.setattr(hooks, "_finished", list(hooks._finished))
    hooks.on_diagnosis_finished(record)
    hooks.on_diagnosis_finished(record)  # registering twice runs it once
    return seen


def test_a_finished_diagnosis_runs_each_callback_once_in_its_transaction(acme, calls):
    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)

    assert _run_every_stage(diagnosis)

    assert calls == [
        {
            "diagnosis_id": diagnosis.id,
            "organization_id": acme.id,
            "in_transaction": True,
            "status": Status.DONE,
        }
    ]


def test_a_callback_that_fails_leaves_the_diagnosis_unfinished(acme, monkeypatch):
    def fail(**kwargs: Any) -> None:
        raise RuntimeError("the outbox could not be written")

    monkeypatch.setattr(hooks, "_finished", [fail])
    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)

    with pytest.raises(RuntimeError):
        _run_every_stage(diagnosis)

    diagnosis.refresh_from_db()
    assert diagnosis.status == STAGES[-1].status  # rolled back with the callback's failure


@pytest.mark.parametrize(
    ("idle_when", "runs"),
    [
        (lambda organization: f"{organization} IS NOT NULL", False),  # idle for acme's
        (lambda organization: f"{organization} IS NULL", True),  # idle for a visitor's only
    ],
)
def test_a_callback_idle_by_its_own_condition_is_not_run_and_the_diagnosis_is_done(
    acme, monkeypatch, idle_when, runs
):
    seen: list[bool] = []

    def record(*, diagnosis_id: Any, organization_id: Any) -> None:
        seen.append(connection.in_atomic_block)

    monkeypatch.setattr(hooks, "_finished", [])
    monkeypatch.setattr(hooks, "_idle_when", {})
    hooks.on_diagnosis_finished(record, idle_when=idle_when)
    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)

    assert _run_every_stage(diagnosis)

    diagnosis.refresh_from_db()
    assert diagnosis.status == Status.DONE
    assert seen == ([True] if runs else [])  # when run, in the transaction that finishes it


def test_the_alerts_outbox_is_written_through_the_hook():
    from alerts import services as alerts

    assert alerts.enqueue_alerts in hooks.finished_callbacks()
