"""What a stage is: the row type of the stage table, and what a runner gets and gives back.

Light on purpose: `diagnosis.models` reads the status choices from here, and the runners
(`runners.py`) and the rows (`table.py`) import the apps and the library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:
    from diagnosis.services.lifecycle import Claim
    from rootcause.engine import Engine
    from rootcause.hangs import Bundle
    from rootcause.result import DiagnosisResult


class Status(models.TextChoices):
    """The statuses outside the stages: a diagnosis waits in QUEUED for the first stage and ends
    in DONE or FAILED. While a stage holds it, its status is that stage's (`Stage.status`), a
    plain string named by the row: adding a stage adds no member here."""

    QUEUED = "queued"
    DONE = "done"
    FAILED = "failed"


FINAL_STATUSES: tuple[str, ...] = (Status.DONE, Status.FAILED)


class Kind(models.TextChoices):
    """What was submitted: one log (or several ranks' logs in one text), or a bundle of one
    job's per-rank files (logs, flight-recorder dumps, stack dumps) judged for a hang. A stage
    row names the kinds it runs for; the others pass it by."""

    LOG = "log"
    BUNDLE = "bundle"


# The column's width (Diagnosis.status): the table refuses a longer stage status.
STATUS_MAX_LENGTH = 16


def status_choices() -> list[tuple[str, str]]:
    """The choices of `Diagnosis.status`: queued, each stage's status, done, failed. A callable
    (Django evaluates it when the choices are first needed), so that the migrations name it
    instead of copying the statuses, and a new stage needs no migration."""
    # Imported here: the rows import the runners, which import the models that call this.
    from diagnosis.pipeline.table import active_statuses

    return [(status, status.capitalize()) for status in (*active_statuses(), *FINAL_STATUSES)]


class StageError(Exception):
    """A failure on our side that no retry will fix; the diagnosis is marked failed."""


class LeaseLost(Exception):
    """The stage's lease may have passed to another worker (it was taken over, or this worker
    could not renew it in time): the runner stops where it is, writes nothing more, and its
    stage is neither completed nor failed here (diagnosis/pipeline/lease.py)."""


@dataclass
class Carried:
    """What a stage hands on in memory to the stages after it in the same task, so that they do
    not read back and parse what it has just stored. Only ever set once the stage completed (its
    writes are the row's), so it is what the row says; a task that starts at a later stage (a
    redelivered message, the sweeper) has nothing carried and reads the row."""

    masked: list[bytes] | None = None  # the masked text, as staged, when it is small
    bundle: Bundle | None = None  # a bundle's files, masked and parsed, as staged
    matched: DiagnosisResult | None = None  # the match stage's result, as stored
    engine: Engine | None = None  # the engine that matched it (its catalogue version is stored)


@dataclass(frozen=True)
class Output:
    """What a runner gives back: the columns its completion writes, and what to do once the
    completion is written (only then, and only if the lease was still held: a runner whose lease
    was taken over must not delete an input or carry on what the new holder will redo)."""

    fields: Mapping[str, object] = field(default_factory=dict)
    after: Callable[[], None] | None = None


# A runner does the work of one stage under a claim and returns what its completion writes.
# It reads its input by the claim's diagnosis (or from `Carried`), raises StageError for a
# failure no retry fixes, and lets connection errors through (the task retries them). A runner
# whose work is long calls `claim.check()` between chunks of it, before each write: it raises
# LeaseLost once the lease may be another worker's.
Runner = Callable[["Claim", Carried], Output]


@dataclass(frozen=True)
class Stage:
    status: str  # the diagnosis's status while this stage holds it
    runner: Runner  # does the stage's work (runners.py)
    task: str  # the name of the Celery task that starts the pipeline at this stage
    percent_done: int  # the progress figure once the stage has completed
    label: str  # what the result page shows while the stage is running
    # Which staged value (diagnosis/staging.py: RAW or MASKED) the stage reads, if any: the
    # staging sweeper fails a diagnosis waiting for this stage whose value Redis lost.
    needs_staged: str | None = None
    # The kinds of diagnosis (Kind) the stage runs for; a diagnosis of another kind goes from
    # the stage before straight to the next one that runs for it.
    kinds: tuple[str, ...] = (Kind.LOG, Kind.BUNDLE)
