"""The suite's own shape: what `make test`'s two processes rely on."""

from __future__ import annotations

from collections import Counter

import pytest


def test_every_test_has_a_node_id_of_its_own(request: pytest.FixtureRequest) -> None:
    """pytest-xdist hands tests out by node id: of tests sharing one, only one would run."""
    counts = Counter(item.nodeid for item in request.session.items)
    assert [nodeid for nodeid, count in counts.items() if count > 1] == []


def test_the_fast_run_keeps_this_test_and_leaves_out_what_needs_a_service(
    request: pytest.FixtureRequest,
) -> None:
    """`make test-fast` (--without-services) runs only what needs_services lets through."""
    from tests.conftest import needs_services

    assert not needs_services(request.node)
    for item in request.session.items:
        asks_database = {"db", "transactional_db"} & set(getattr(item, "fixturenames", ()))
        if asks_database or item.get_closest_marker("e2e") or item.get_closest_marker("browser"):
            assert needs_services(item), item.nodeid
    if request.config.getoption("--without-services"):
        assert not [item.nodeid for item in request.session.items if needs_services(item)]
