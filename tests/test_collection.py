"""The suite's own shape: what `make test`'s two processes rely on."""

from __future__ import annotations

from collections import Counter

import pytest


def test_every_test_has_a_node_id_of_its_own(request: pytest.FixtureRequest) -> None:
    """pytest-xdist hands tests out by node id: of tests sharing one, only one would run."""
    counts = Counter(item.nodeid for item in request.session.items)
    assert [nodeid for nodeid, count in counts.items() if count > 1] == []
