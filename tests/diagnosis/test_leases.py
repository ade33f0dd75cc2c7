"""A stage's lease while it runs: renewed by the heartbeat thread, lost when taken over, and
never two holders at work at once (diagnosis/pipeline/lease.py).

The stages here are the test's own (one row, `use_table`), run by the loop as a worker runs
them, in this process; the heartbeat is the real thread, renewing through its own PostgreSQL
connection, so the rows are committed (`transactional_db`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from celery.exceptions import Ignore
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from diagnosis.models import Diagnosis
from diagnosis.pipeline import lease as lease_module
from diagnosis.pipeline import runners
from diagnosis.pipeline.loop import run_stages
from diagnosis.pipeline.stage import Carried, LeaseLost, Output, Stage, StageError
from diagnosis.pipeline.table import use_table
from diagnosis.services import lifecycle
from workers.tasks import STAGE_TASKS

# Short, so that a stage outlives leases in seconds: renewed every 2 s, its holder stopping 2 s
# before it lapses. (Shorter leases leave too little room on a machine busy enough that the
# heartbeat thread or PostgreSQL waits a second for a core.)
LEASE = 6


@dataclass
class Run:
    """What the test's runner did."""

    checks: int = 0
    finished: bool = False
    stopped_at: float | None = None  # monotonic, when a check raised LeaseLost
    errors: list[BaseException] = field(default_factory=list)


Runner = Callable[[lifecycle.Claim, Carried], Output]
# The runner of the test's one stage, `working`, set by each test.
RUNNER: list[Runner] = []


def _working(claim: lifecycle.Claim, carried: Carried) -> Output:
    return RUNNER[-1](claim, carried)


WORKING = Stage("working", _working, task="workers.tasks.mask", percent_done=100, label="Working")


@pytest.fixture
def held(transactional_db: Any, acme: Any) -> Iterator[Diagnosis]:
    """A queued diagnosis whose pipeline is the one stage `working`."""
    with use_table((WORKING,)):
        yield Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)
    RUNNER.clear()


@pytest.fixture
def queued(db: Any, acme: Any) -> Iterator[Diagnosis]:
    """The same, for the tests that start no heartbeat (their rows need not be committed)."""
    with use_table((WORKING,)):
        yield Diagnosis.objects.create(organization=acme, source="api", size_bytes=10)


def _run(diagnosis: Diagnosis, runner: Runner) -> None:
    """The loop, as a worker's task runs it (not eagerly)."""
    RUNNER.append(runner)
    task = STAGE_TASKS["masking"]
    task.push_request(id=str(uuid.uuid4()), retries=0, is_eager=False)
    try:
        run_stages(task, str(diagnosis.id), WORKING)
    finally:
        task.pop_request()


def _work(claim: lifecycle.Claim, run: Run, seconds: float, during: Callable[[], None]) -> None:
    """Chunks of work for `seconds`, the lease checked before each, `during` called once early."""
    started = time.monotonic()
    called = False
    while time.monotonic() - started < seconds:
        try:
            claim.check()
        except LeaseLost:
            run.stopped_at = time.monotonic()
            raise
        run.checks += 1
        if not called and time.monotonic() - started > 0.2:
            called = True
            during()
        time.sleep(0.02)
    run.finished = True


def _take_over(diagnosis: Diagnosis) -> lifecycle.Claim:
    """What another worker does once the lease has lapsed (a paused holder's, say)."""
    Diagnosis.objects.filter(id=diagnosis.id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    claim = lifecycle.claim_stage(diagnosis_id=str(diagnosis.id), stage="working")
    assert isinstance(claim, lifecycle.Claim)
    return claim


@pytest.mark.slow  # a timing test: seconds of leases
@override_settings(DIAGNOSIS_STAGE_LEASE_SECONDS=LEASE)
def test_a_stage_longer_than_its_lease_keeps_it_and_nobody_else_runs_it(held):
    run = Run()
    others: list[object] = []

    def look_again() -> None:
        # Another worker (a duplicate message, the sweeper's) tries the stage now and then.
        others.append(lifecycle.claim_stage(diagnosis_id=str(held.id), stage="working"))

    def runner(claim: lifecycle.Claim, carried: Carried) -> Output:
        _work(claim, run, 1.5 * LEASE, look_again)
        for _ in range(2):
            time.sleep(LEASE / 2)
            look_again()  # past the first lease: renewed, so still busy
        return Output({"failure_reason": ""})

    _run(held, runner)

    held.refresh_from_db()
    assert run.finished
    assert run.checks > 100
    assert len(others) == 3
    assert all(isinstance(other, lifecycle.Busy) for other in others), others
    assert held.status == "done"
    assert held.attempts == 1  # claimed once: never taken over


@pytest.mark.slow  # a timing test: seconds of leases
@override_settings(DIAGNOSIS_STAGE_LEASE_SECONDS=LEASE)
def test_a_stage_whose_lease_is_taken_over_stops_and_cannot_complete(held):
    run = Run()
    stolen: list[tuple[float, lifecycle.Claim]] = []

    def steal() -> None:
        stolen.append((time.monotonic(), _take_over(held)))

    def runner(claim: lifecycle.Claim, carried: Carried) -> Output:
        _work(claim, run, 2 * LEASE, steal)
        return Output({"failure_reason": "the old holder's"})

    with pytest.raises(Ignore):
        _run(held, runner)

    # Stopped at its first check after a renewal found the lease gone: within a heartbeat round
    # (or at the latest by its own clock).
    ((stolen_at, thief),) = stolen
    assert not run.finished
    assert run.stopped_at is not None
    assert run.stopped_at - stolen_at < LEASE * 2 / 3
    held.refresh_from_db()
    assert (held.status, held.lease_token, held.failure_reason) == ("working", thief.token, "")
    # The new holder completes; the old one's result was discarded, not written.
    assert lifecycle.complete_stage(thief) is True
    held.refresh_from_db()
    assert held.status == "done"
    assert held.failure_reason == ""


@pytest.mark.slow  # a timing test: seconds of leases
@override_settings(DIAGNOSIS_STAGE_LEASE_SECONDS=LEASE)
def test_a_holder_that_cannot_renew_stops_before_anyone_may_take_over(
    held, monkeypatch: pytest.MonkeyPatch
):
    def unreachable(**kwargs: object) -> None:
        raise OperationalError("connection refused")  # PostgreSQL away for the heartbeat alone

    monkeypatch.setattr(lease_module.heartbeat, "_renew", unreachable)
    run = Run()
    expiries: list[Any] = []

    def runner(claim: lifecycle.Claim, carried: Carried) -> Output:
        expiries.append(claim.diagnosis.lease_expires_at)
        _work(claim, run, 2 * LEASE, lambda: None)
        return Output()

    with pytest.raises(Ignore):
        _run(held, runner)

    # By its own clock, a third of a lease before the row's lease lapses: nobody could claim yet.
    assert not run.finished
    assert run.stopped_at is not None
    assert timezone.now() < expiries[0]
    assert isinstance(
        lifecycle.claim_stage(diagnosis_id=str(held.id), stage="working"), lifecycle.Busy
    )
    held.refresh_from_db()
    assert held.status == "working"
    assert held.failure_reason == ""


@override_settings(DIAGNOSIS_STAGE_LEASE_SECONDS=LEASE)
def test_a_stale_holders_failure_does_not_fail_the_new_holders_diagnosis(held):
    def runner(claim: lifecycle.Claim, carried: Carried) -> Output:
        _take_over(held)
        # Its input gone from under it (the new holder moved on), say: no check before this.
        raise StageError("the stale holder's failure")

    with pytest.raises(Ignore):
        _run(held, runner)

    held.refresh_from_db()
    assert held.status == "working"
    assert held.failure_reason == ""


def test_a_renewal_extends_only_a_live_lease_under_its_own_token(queued):
    claim = lifecycle.claim_stage(diagnosis_id=str(queued.id), stage="working")
    assert isinstance(claim, lifecycle.Claim)
    before = claim.diagnosis.lease_expires_at
    assert before is not None

    def renew(token: uuid.UUID) -> Any:
        return lifecycle.renew_lease(diagnosis_id=str(queued.id), status="working", token=token)

    time.sleep(0.01)
    assert renew(claim.token) > before
    assert renew(uuid.uuid4()) is None
    Diagnosis.objects.filter(id=queued.id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert renew(claim.token) is None  # lapsed: another worker may be claiming it


def test_the_match_runner_reads_no_further_once_its_lease_is_lost(queued):
    checks: list[int] = []

    def lost() -> None:
        checks.append(1)
        raise LeaseLost("the lease was taken over")

    carried = Carried(masked=[b"step 1 loss 2.0\n", b"CUDA out of memory\n"])
    claim = lifecycle.Claim(queued, uuid.uuid4(), check=lost)

    with pytest.raises(LeaseLost):
        runners.run_match(claim, carried)

    assert checks == [1]  # before its first chunk
    assert carried.matched is None
