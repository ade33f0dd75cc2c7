"""The pipeline's stage table: one row per stage, in the order a diagnosis goes through them.

The table drives everything that follows the stages: the status a diagnosis has while a stage
runs, the status it moves to when the stage completes, its progress figure, the runner that does
its work, which staged value it reads (the staging sweeper's check), the Celery task a message
names to start there (by name: `workers/` registers a task for each row and nothing here imports
it), the status column's choices, and what the result page says while it waits.

Adding a stage is one row here and one runner (runners.py): the statuses are the rows', so no
enum member and no migration is needed (`Diagnosis.status` takes its choices from
`stage.status_choices`, a callable that migrations name rather than copy).

Everything reads the table through the functions below, at call time, so a test can put a table
of its own in place (`use_table`) and run a diagnosis through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from diagnosis.pipeline import runners
from diagnosis.pipeline.stage import FINAL_STATUSES, STATUS_MAX_LENGTH, Kind, Stage, Status
from diagnosis.staging import MASKED, RAW

STAGES: tuple[Stage, ...] = (
    Stage(
        "masking",
        runners.run_mask,
        task="workers.tasks.mask",
        percent_done=40,
        label="Masking personal data and secrets",
        needs_staged=RAW,
    ),
    Stage(
        "matching",
        runners.run_match,
        task="workers.tasks.match",
        percent_done=80,
        label="Matching the log against the catalogue",
        needs_staged=MASKED,
        kinds=(Kind.LOG,),
    ),
    Stage(
        "analysing",
        runners.run_analyse,
        task="workers.tasks.analyse",
        percent_done=80,
        label="Reading the ranks' stacks and flight-recorder dumps",
        needs_staged=MASKED,
        kinds=(Kind.BUNDLE,),
    ),
    Stage(
        "remediating",
        runners.run_remediate,
        task="workers.tasks.remediate",
        percent_done=100,
        label="Looking up the fix",
    ),
)


class StageTable:
    """The rows and what is derived from them, checked once when the table is made."""

    def __init__(self, stages: tuple[Stage, ...]) -> None:
        statuses = [stage.status for stage in stages]
        reserved = {Status.QUEUED, *FINAL_STATUSES}
        if not stages or len(set(statuses)) != len(statuses) or reserved & set(statuses):
            raise ValueError(f"stage statuses must be distinct and not {sorted(reserved)}")
        if any(len(status) > STATUS_MAX_LENGTH for status in statuses):
            raise ValueError(f"a stage status is longer than {STATUS_MAX_LENGTH} characters")
        if set(stages[0].kinds) != set(Kind.values):
            # a queued diagnosis of any kind is claimed by the first stage
            raise ValueError("the first stage must run for every kind of diagnosis")
        self.stages = stages
        self.index = {status: i for i, status in enumerate(statuses)}
        # A diagnosis waits in QUEUED for the first stage, and ends in DONE or FAILED.
        self.active = (str(Status.QUEUED), *statuses)
        # What each active status still needs from the staging store: a queued diagnosis what
        # its first stage reads.
        needs = {stage.status: stage.needs_staged for stage in stages if stage.needs_staged}
        if stages[0].needs_staged:
            needs = {str(Status.QUEUED): stages[0].needs_staged, **needs}
        self.needs_staged = needs
        # The most stages one diagnosis goes through (every claim and hand-on asks).
        self.longest_path = max(
            sum(kind in stage.kinds for stage in stages) for kind in Kind.values
        )


_table = StageTable(STAGES)


@contextmanager
def use_table(stages: tuple[Stage, ...]) -> Iterator[None]:
    """Runs the pipeline with `stages` instead of STAGES while the block lasts (tests only:
    a stage added in a fixture)."""
    global _table
    previous, _table = _table, StageTable(stages)
    try:
        yield
    finally:
        _table = previous


def stages() -> tuple[Stage, ...]:
    """The rows, in order."""
    return _table.stages


def active_statuses() -> tuple[str, ...]:
    """QUEUED and every stage's status: a diagnosis in one of them is not finished."""
    return _table.active


def is_active(status: str) -> bool:
    return status in _table.active


def needs_staged() -> dict[str, str]:
    """The staged value (RAW or MASKED) each active status still needs; absent: none."""
    return _table.needs_staged


def stage_of(status: str) -> Stage:
    """The stage that runs while a diagnosis is in `status` (KeyError for queued/done/failed)."""
    return _table.stages[_table.index[status]]


def stages_from(status: str) -> tuple[Stage, ...]:
    """The stages still ahead of a diagnosis in `status`: all of them while queued, the current
    one and those after it while a stage holds it, none once it has finished."""
    if status == Status.QUEUED:
        return _table.stages
    index = _table.index.get(status)
    return () if index is None else _table.stages[index:]


def status_after(stage: Stage, kind: str = Kind.LOG) -> str:
    """Where a diagnosis of `kind` goes when `stage` completes: the next stage that runs for
    that kind, or DONE."""
    for later in _table.stages[_table.index[stage.status] + 1 :]:
        if kind in later.kinds:
            return later.status
    return Status.DONE


def longest_path() -> int:
    """The most stages one diagnosis goes through (the attempts cap counts a claim of each)."""
    return _table.longest_path


def stages_for(kind: str) -> tuple[Stage, ...]:
    """The stages a diagnosis of `kind` goes through, in order (the result page lists them)."""
    return tuple(stage for stage in _table.stages if kind in stage.kinds)


def may_claim(stage: Stage) -> tuple[str, ...]:
    """The statuses from which `stage` may be claimed: its own (a retry or a take-over after an
    expired lease) and, for the first stage, QUEUED."""
    if stage.status == _table.stages[0].status:
        return (Status.QUEUED, stage.status)
    return (stage.status,)
