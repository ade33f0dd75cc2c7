"""The diagnosis tests are about intake, results, history and access, not about matching.

So they run on a one-entry catalogue under the shipped slug and title of the failure in
`logs.OOM_LOG`, which loads in milliseconds; matching over the whole catalogue is the subject of
tests/rootcause (the engine and every sample log) and of the end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from encyclopedia.services import load_catalogue
from tests.catalogue import oom_entry
from tests.redis_namespace import delete_run_keys


@pytest.fixture(autouse=True)
def _staged_logs_do_not_outlive_the_test() -> Iterator[None]:
    """Redis is not rolled back with the test's transaction: a log staged by a request whose
    pipeline the test did not run would stay there for the next test to see."""
    yield
    delete_run_keys()


@pytest.fixture(autouse=True)
def _catalogue(db: Any) -> None:
    load_catalogue(entries=[oom_entry()])
