"""A worker builds what every diagnosis uses before its pool forks (workers/tasks.py's
`warm_up_pipeline` on `worker_init`): its children start with the analyzer and the current
catalogue's engine, instead of each building them on its first diagnosis while diagnoses wait."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from celery import signals
from django.db import OperationalError

from diagnosis.pipeline import runners
from encyclopedia.selectors import current_engine, current_version
from encyclopedia.services import load_catalogue
from rootcause.masking.recognizer import shared_analyzer
from tests.catalogue import make_entry


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the warm-up freezes this process's objects, as a worker's main process's


def _worker_starts() -> None:
    """What a `celery worker` sends before it starts its pool. No WorkController is made for
    it: making one sets this process up as a worker's (Celery's task_join_will_block), and every
    later test in it that waits on a result would then fail with "Never call result.get() within
    a task!"."""
    signals.worker_init.send(sender=None)


@pytest.mark.django_db(transaction=True)
def test_a_starting_worker_builds_the_engine_and_the_analyzer_before_any_diagnosis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_catalogue(entries=[make_entry("test-oom"), make_entry("test-disk", category="checkpoint")])
    shared_analyzer.cache_clear()

    _worker_starts()

    assert shared_analyzer.cache_info().currsize == 1
    # A diagnosis of the current catalogue now builds no engine.
    import rootcause.engine

    def no_new_engine(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an engine was built after the warm-up")

    monkeypatch.setattr(rootcause.engine, "Engine", no_new_engine)
    engine = current_engine(current_version())
    assert sorted(engine.by_slug) == ["test-disk", "test-oom"]
    assert gc.get_freeze_count() > 0


@pytest.mark.django_db(transaction=True)
def test_a_worker_starts_even_when_the_warm_up_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(version: str | None = None) -> None:
        raise OperationalError("PostgreSQL is not up yet")

    monkeypatch.setattr(runners, "current_engine", unreachable)

    _worker_starts()  # logged, not raised: each child then builds on its first diagnosis
