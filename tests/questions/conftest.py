"""The diagnosis tests' world: the one-entry test catalogue and the staged logs' cleanup (these
tests submit logs through the diagnosis pipeline too)."""

from tests.diagnosis.conftest import (  # noqa: F401 - fixtures, registered by being imported
    _catalogue,
    _staged_logs_do_not_outlive_the_test,
)
