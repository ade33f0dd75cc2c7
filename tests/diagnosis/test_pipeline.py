"""The stage table drives the statuses, the progress figures, the chain and the registered tasks;
a stage added in a fixture (one row and one runner) goes through the whole pipeline."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.celery import app as celery_app
from diagnosis.models import Diagnosis
from diagnosis.pipeline import table as stages
from diagnosis.pipeline.stage import Carried, Kind, Output, Stage, Status
from diagnosis.pipeline.table import STAGES
from diagnosis.services import lifecycle, upkeep
from diagnosis.staging import MASKED, RAW
from tests.diagnosis.logs import OOM_LOG
from workers.tasks import stage_task

URL = "/api/v1/diagnoses"


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        (Kind.LOG, [("masking", 40), ("matching", 80), ("remediating", 100)]),
        (Kind.BUNDLE, [("masking", 40), ("analysing", 80), ("remediating", 100)]),
    ],
)
def test_a_diagnosis_goes_through_its_kinds_stages_in_order_and_ends_done(kind, path):
    status: str = Status.QUEUED
    seen = []
    while status != Status.DONE:
        stage = stages.stage_of(status) if status != Status.QUEUED else stages.stages()[0]
        seen.append((stage.status, stage.percent_done))
        status = stages.status_after(stage, kind)

    assert seen == path
    assert [s.status for s in stages.stages_for(kind)] == [status for status, _ in path]
    # The attempts cap counts the claims of the longest path, not every row.
    assert stages.longest_path() == 3


def test_a_table_whose_first_stage_skips_a_kind_is_refused():
    with pytest.raises(ValueError, match="every kind"):
        stages.StageTable((STAGES[1], STAGES[3]))


def test_finished_diagnoses_have_no_stage_ahead():
    assert stages.stages_from(Status.DONE) == ()
    assert stages.stages_from(Status.FAILED) == ()
    assert stages.stages_from("matching") == STAGES[1:]
    assert stages.stages_from("analysing") == STAGES[2:]


def test_only_the_first_stage_is_claimed_from_queued():
    assert stages.may_claim(STAGES[0]) == (Status.QUEUED, "masking")
    assert stages.may_claim(STAGES[1]) == ("matching",)


def test_every_stage_has_a_registered_task():
    registered = set(celery_app.tasks)

    assert {stage.task for stage in STAGES} <= registered


def test_what_each_active_status_needs_from_the_staging_store_comes_from_the_rows():
    # Queued waits for the first stage, which reads the raw log; remediation reads nothing staged.
    assert stages.needs_staged() == {
        "queued": RAW,
        "masking": RAW,
        "matching": MASKED,
        "analysing": MASKED,
    }


def test_the_status_choices_are_the_tables():
    field = Diagnosis._meta.get_field("status")

    assert [value for value, _ in field.choices or ()] == [
        "queued",
        "masking",
        "matching",
        "analysing",
        "remediating",
        "done",
        "failed",
    ]


@pytest.mark.parametrize(
    "statuses",
    [("masking", "masking"), ("queued",), ("done",), ("a-status-too-long-for-its-column",)],
)
def test_a_table_with_a_clashing_or_overlong_status_is_refused(statuses):
    rows = tuple(dataclasses.replace(STAGES[0], status=status) for status in statuses)

    with pytest.raises(ValueError, match="stage status"):
        stages.StageTable(rows)


# --- A stage added in a fixture ---------------------------------------------------------------


@dataclasses.dataclass
class Seen:
    """What the added stage's runner saw while it ran."""

    claims: list[str] = dataclasses.field(default_factory=list)
    carried_a_match: bool = False
    api: dict[str, Any] = dataclasses.field(default_factory=dict)
    page: str = ""


@pytest.fixture
def reviewing(client: Any, acme_api: Any, alice: Any) -> Iterator[tuple[Stage, Seen]]:
    """A stage `reviewing` between matching and remediation: one row and one runner, here."""
    seen = Seen()
    client.force_login(alice)

    def run_review(claim: lifecycle.Claim, carried: Carried) -> Output:
        diagnosis_id = claim.diagnosis.id
        seen.claims.append(claim.diagnosis.status)
        seen.carried_a_match = carried.matched is not None
        # While it runs, as a member polling the API and looking at the page would see it.
        seen.api = acme_api.get(f"{URL}/{diagnosis_id}").json()
        seen.page = client.get(f"/diagnoses/{diagnosis_id}/").content.decode()
        return Output({"failure_reason": ""})

    row = Stage(
        "reviewing",
        run_review,
        task="workers.tasks.review",
        percent_done=90,
        label="Reviewing the evidence twice",
    )
    with stages.use_table((*STAGES[:2], row, *STAGES[2:])):
        yield row, seen


def test_a_stage_added_as_one_row_and_one_runner_runs_in_the_pipeline(
    reviewing: tuple[Stage, Seen], acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    row, seen = reviewing

    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")

    diagnosis = Diagnosis.objects.get(pk=response.json()["id"])
    # Claimed (its status the row's), run once, after matching and before remediation.
    assert seen.claims == ["reviewing"]
    assert seen.carried_a_match
    # Its progress figure is the stage before it's while it runs, and its label is shown.
    assert (seen.api["status"], seen.api["progress"]) == ("reviewing", 80)
    assert "Reviewing the evidence twice" in seen.page
    assert 'data-status="reviewing" aria-current="step"' in seen.page
    # Then remediation ran, and the diagnosis is done: four stages, one claim each.
    assert (diagnosis.status, diagnosis.progress) == (Status.DONE, 100)
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert diagnosis.result["remediation"] is not None
    assert diagnosis.attempts == 4
    assert stages.status_after(row) == "remediating"


def test_a_stage_added_as_one_row_needs_no_migration_and_is_a_status_choice(
    reviewing: tuple[Stage, Seen],
) -> None:
    field = Diagnosis._meta.get_field("status")

    assert ("reviewing", "Reviewing") in (field.choices or ())
    # Exits non-zero if the models differ from the migrations.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_a_stage_added_as_one_row_gets_its_task(reviewing: tuple[Stage, Seen]) -> None:
    row, _ = reviewing

    task = stage_task(row)

    # shared_task gives a proxy of the app's task: the app's registry has it by name.
    assert task.name == "workers.tasks.review"
    assert celery_app.tasks["workers.tasks.review"].name == task.name


def test_a_diagnosis_in_an_added_stage_is_swept_like_any_other(
    reviewing: tuple[Stage, Seen], acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(upkeep, "enqueue_pipeline", lambda i, s: sent.append((str(i), s)))
    stuck = Diagnosis.objects.create(
        organization=acme, source="api", size_bytes=1, status="reviewing"
    )
    Diagnosis.objects.filter(pk=stuck.pk).update(
        lease_expires_at=None, updated_at=timezone.now() - timedelta(days=1)
    )

    assert upkeep.requeue_stuck_diagnoses() == 1
    assert sent == [(str(stuck.id), "reviewing")]
    assert lifecycle.pipeline_from("reviewing") == "workers.tasks.review"
    assert lifecycle.fail_diagnosis(diagnosis_id=str(stuck.id), reason="boom")


# --- The sweepers' index ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sweepers_queries_use_the_index_of_unfinished_diagnoses(acme: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the planner's proof is PostgreSQL's")
    with connection.cursor() as cursor:
        # A few rows: without this the planner reads the table whatever the index.
        cursor.execute("SET LOCAL enable_seqscan = off")
    with CaptureQueriesContext(connection) as queries:
        upkeep.requeue_stuck_diagnoses()
        upkeep.sweep_staging()
    plans = []
    for query in queries.captured_queries:
        sql = query["sql"]
        if 'FROM "diagnosis_diagnosis"' in sql and "status" in sql and '"id" IN' not in sql:
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN {sql}")
                plans.append("\n".join(row[0] for row in cursor.fetchall()))

    assert len(plans) == 2
    for plan in plans:
        assert "diagnosis_unfinished_updated" in plan, plan
