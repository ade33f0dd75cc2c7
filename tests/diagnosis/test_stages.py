"""The stage table drives the statuses, the progress figures, the chain and the registered tasks."""

from config.celery import app as celery_app
from diagnosis import stages
from diagnosis.stages import STAGES, Status


def test_a_diagnosis_goes_through_every_stage_in_order_and_ends_done():
    status, seen = Status.QUEUED, []
    while status != Status.DONE:
        stage = stages.stages_from(status)[0]
        seen.append((stage.status, stage.percent_done))
        status = stages.status_after(stage)

    assert seen == [("masking", 40), ("matching", 80), ("remediating", 100)]


def test_finished_diagnoses_have_no_stage_ahead():
    assert stages.stages_from(Status.DONE) == ()
    assert stages.stages_from(Status.FAILED) == ()
    assert stages.stages_from(Status.MATCHING) == STAGES[1:]


def test_only_the_first_stage_is_claimed_from_queued():
    assert stages.may_claim(STAGES[0]) == (Status.QUEUED, Status.MASKING)
    assert stages.may_claim(STAGES[1]) == (Status.MATCHING,)


def test_every_stage_has_a_registered_task():
    registered = set(celery_app.tasks)

    assert {stage.task for stage in STAGES} <= registered
