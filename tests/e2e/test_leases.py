"""Stage leases with real workers: a killed worker's diagnosis is taken over by another within
90 s with the shipped settings, and a stage longer than its lease is never run twice at once
(diagnosis/pipeline/lease.py, docs/operations.md).

Two `celery worker` processes on the run's Redis, and for the take-over the beat that runs the
stuck-diagnosis sweeper. Redis's own redelivery of a killed worker's message waits for
CELERY_VISIBILITY_TIMEOUT, left at its 600 s here: what rescues the diagnosis is its lease
lapsing and the sweeper re-queueing it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnosis.models import Diagnosis
from diagnosis.services import lifecycle
from tests.e2e import stack
from tests.e2e.diagnoses import big_log, wait_for_status
from tests.redis_namespace import delete_run_keys
from tests.worker import WorkerProcess, tasks_through_redis, wait_for_output, worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

URL = "/api/v1/diagnoses"
LEASE = 6  # seconds, for the stage longer than its lease


@pytest.fixture
def two_workers(transactional_db: Any, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    """Two workers (the test starts them), the test's `.delay()` calls going through Redis."""
    delete_run_keys()
    workers: list[WorkerProcess] = []
    with tasks_through_redis():
        try:
            yield workers
        finally:
            for worker in workers:
                worker.stop()


def _start(workers: list[WorkerProcess], env: dict[str, str], tmp_path: Path) -> None:
    for name in ("a", "b"):
        worker = WorkerProcess(env, tmp_path / f"worker-{name}.log", name=name)
        workers.append(worker)
        worker.start()


def _holder(workers: list[WorkerProcess], diagnosis_id: str) -> WorkerProcess:
    """The worker whose task is running the diagnosis now."""
    from config.celery import app

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        active = app.control.inspect([w.name for w in workers], timeout=1).active() or {}
        for worker in workers:
            if any(diagnosis_id in str(task.get("args")) for task in active.get(worker.name, [])):
                return worker
    raise AssertionError("no worker runs the diagnosis")


def test_a_worker_killed_mid_stage_is_taken_over_by_another_within_90_seconds(
    two_workers, catalogue, acme_api, tmp_path
):
    # The shipped lease and sweeper period (30 s, 10 s): none is set here.
    env = worker_environment(CELERY_VISIBILITY_TIMEOUT="600")
    assert "DIAGNOSIS_STAGE_LEASE_SECONDS" not in env
    assert "DIAGNOSIS_SWEEP_SECONDS" not in env
    beat = stack.beat(env, tmp_path / "beat.log", tmp_path)
    _start(two_workers, env, tmp_path)
    beat.start()
    try:
        # Big enough that the kill lands inside masking (finding the holder asks the workers,
        # up to a second), small enough to redo in seconds.
        response = acme_api.post(URL, data=big_log(6), content_type="text/plain")
        assert response.status_code == 202
        diagnosis_id = response.json()["id"]
        wait_for_status(diagnosis_id, until=("masking",), timeout=60)
        holder = _holder(two_workers, diagnosis_id)
        (other,) = (w for w in two_workers if w is not holder)

        holder.kill()  # SIGKILL, main process and pool child: no cleanup, no ack
        killed_at = time.monotonic()
        assert Diagnosis.objects.get(id=diagnosis_id).status == "masking", "killed too late"
        diagnosis = wait_for_status(diagnosis_id, until=("done", "failed"), timeout=120)
        took = time.monotonic() - killed_at
    finally:
        beat.stop()

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert took < 90, f"taken over and finished {took:.0f} s after the kill"
    done_line = f"diagnosis {diagnosis_id} done"
    wait_for_output(other, done_line, timeout=30)
    assert done_line not in holder.output()
    assert diagnosis.attempts == 4  # masking claimed twice (the kill, the take-over), then 2
    print(f"killed in masking; done by the other worker {took:.1f} s later")


def test_a_stage_longer_than_its_lease_runs_once_while_a_duplicate_waits(
    two_workers, catalogue, acme_api, tmp_path
):
    # A lease of 6 s, renewed every 2 s, its holder stopping 2 s before it lapses: the stages of
    # this log take longer. (Shorter leases leave too little room on a machine busy enough that
    # the heartbeat thread waits seconds for a core.)
    env = worker_environment(
        DIAGNOSIS_STAGE_LEASE_SECONDS=str(LEASE), CELERY_VISIBILITY_TIMEOUT="600"
    )
    _start(two_workers, env, tmp_path)

    # 16 MB: its stages take about twice the lease on an idle machine (8 MB took 5.9 s once
    # masking got faster), more on a busy one.
    response = acme_api.post(URL, data=big_log(16), content_type="text/plain")
    assert response.status_code == 202
    diagnosis_id = response.json()["id"]
    wait_for_status(diagnosis_id, until=("masking",), timeout=60)
    started = time.monotonic()
    # A second message for the same diagnosis (a redelivery, the sweeper's): the idle worker
    # takes it while the first still masks.
    lifecycle.enqueue_pipeline(Diagnosis.objects.get(id=diagnosis_id).id, "queued")
    diagnosis = wait_for_status(diagnosis_id, until=("done", "failed"), timeout=120)
    took = time.monotonic() - started

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert took > LEASE, "the stages were shorter than a lease: nothing was tested"
    assert diagnosis.attempts == 3  # each stage claimed once: the duplicate never took one over
    done_line = f"diagnosis {diagnosis_id} done"
    for worker in two_workers:
        worker.wait_idle()
    outputs = "".join(worker.output() for worker in two_workers)
    assert outputs.count(done_line) == 1
    assert "retry: Retry in" in outputs  # the duplicate came, found the lease renewed, waited
    assert "lease lost" not in outputs
    assert "stopped:" not in outputs
    print(f"stages took {took:.1f} s under a {LEASE} s lease")
