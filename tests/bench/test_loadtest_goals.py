"""`make loadtest`'s verdict on a run's figures (bench/loadtest/goals.py): a missed goal is a
non-zero exit, whatever else went well, and the report names the reference work of the run."""

from __future__ import annotations

import math

import pytest

from bench.loadtest import run
from bench.loadtest.goals import GOAL_MISSED, Figures, check_goals, describe, goals_met

SLOW = (58.4, 61.0)  # ms: a slow minute's reference work, before and after the phases


def _figures(
    e2e_rate: float = 64.0,
    p99: float = 1.4,
    intake_rate: float | None = 320.0,
    reference: tuple[float, float] = SLOW,
) -> Figures:
    return Figures(e2e_rate=e2e_rate, p99=p99, intake_rate=intake_rate, reference_ms=reference)


def _verdicts(figures: Figures) -> dict[str, bool | None]:
    return {outcome.name: outcome.met for outcome in check_goals(figures)}


def test_a_run_that_meets_every_goal_passes() -> None:
    outcomes = check_goals(_figures())

    assert goals_met(outcomes)
    assert all(outcome.met for outcome in outcomes)


@pytest.mark.parametrize(
    ("figures", "missed"),
    [
        (_figures(e2e_rate=58.9), "end to end"),
        (_figures(p99=2.0), "submit->done p99"),  # the goal is under 2 s
        (_figures(p99=math.nan), "submit->done p99"),  # nothing finished
        (_figures(intake_rate=299.9), "intake alone"),
    ],
)
def test_each_goal_missed_fails_the_run(figures: Figures, missed: str) -> None:
    verdicts = _verdicts(figures)

    assert verdicts[missed] is False
    assert [name for name, met in verdicts.items() if met is False] == [missed]
    assert not goals_met(check_goals(figures))


def test_an_intake_phase_left_out_is_not_measured_and_fails_nothing() -> None:
    figures = _figures(intake_rate=None)

    assert _verdicts(figures)["intake alone"] is None
    assert goals_met(check_goals(figures))
    assert "not measured" in describe(figures, check_goals(figures))


def test_the_report_prints_the_figures_beside_the_runs_reference_work() -> None:
    figures = _figures(e2e_rate=52.3, intake_rate=181.0)

    text = describe(figures, check_goals(figures))

    assert "reference work of 58.4 ms before, 61.0 ms after" in text
    assert "52.3 diagnoses/s" in text
    assert "181.0 submissions/s" in text
    assert text.count("MISSED") == 2
    assert "faster than" not in text  # a slow minute: the run speaks for the slow minutes


def test_a_run_on_a_fast_machine_says_it_does_not_vouch_for_the_slow_minutes() -> None:
    figures = _figures(reference=(33.1, 35.0))

    assert "this run does not show the goals hold in them" in describe(
        figures, check_goals(figures)
    )


def _end_to_end(*, done: int, lost: list[str] | None = None) -> run.EndToEnd:
    return run.EndToEnd(
        submitted=done,
        unanswered=0,
        seconds=30.0,
        done=done,
        failed=0,
        lost=lost or [],
        unfinished={},
        leftover_keys=0,
        latencies=[0.5] * done,
        answer_times=[0.01] * done,
        refused={},
        reasons={},
        last_finished_after=30.0,
        cpu="",
    )


def _intake(accepted: int) -> run.Intake:
    return run.Intake(
        accepted=accepted,
        seconds=15.0,
        refused={},
        missing_rows=0,
        missing_raw=0,
        p50=0.05,
        p99=0.2,
        cpu="",
    )


def test_the_exit_status_is_non_zero_when_a_goal_is_missed() -> None:
    # 30 s: 1,950 done = 65/s, 4,800 taken in 15 s = 320/s; 1,500 done = 50/s.
    assert run.exit_status(_end_to_end(done=1950), _intake(4800), SLOW) == 0
    assert run.exit_status(_end_to_end(done=1500), _intake(4800), SLOW) == GOAL_MISSED
    assert run.exit_status(_end_to_end(done=1950), _intake(2700), SLOW) == GOAL_MISSED
    # Something lost says more than a missed goal.
    assert run.exit_status(_end_to_end(done=1500, lost=["x"]), _intake(4800), SLOW) == 1
