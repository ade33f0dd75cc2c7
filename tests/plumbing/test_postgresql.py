"""The PostgreSQL backend's health check: a poll of the socket, a query only when the server
has spoken (plumbing/postgresql/base.py)."""

from __future__ import annotations

import select
from typing import Any

import psycopg
import pytest
from django.db import connections

from plumbing.postgresql.base import DatabaseWrapper

pytestmark = pytest.mark.django_db(transaction=True)

# The default connection itself, not its proxy; the health check's attributes are not in
# django-stubs.
connection: Any = connections["default"]


def _checked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Django's own check (a `SELECT 1`), counted as it runs."""
    asked: list[bool] = []
    is_usable = DatabaseWrapper.is_usable

    def counted(self: DatabaseWrapper) -> bool:
        asked.append(usable := is_usable(self))
        return usable

    monkeypatch.setattr(DatabaseWrapper, "is_usable", counted)
    return asked


def _a_new_request() -> None:
    # What Django does at the start of a request with CONN_HEALTH_CHECKS (close_old_connections).
    connection.close_if_unusable_or_obsolete()
    assert connection.health_check_done is False


def _query() -> Any:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_backend_is_ours_and_checks_health() -> None:
    assert connection.health_check_enabled
    assert isinstance(connection, DatabaseWrapper)


def test_a_quiet_connection_is_kept_without_a_query(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _query()
    asked = _checked(monkeypatch)

    for _ in range(3):
        _a_new_request()
        assert _query() == backend

    assert asked == []


def test_a_connection_whose_backend_was_terminated_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = _query()
    asked = _checked(monkeypatch)
    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [backend])
    socket = connection.connection.fileno()
    assert select.select([socket], [], [], 10)[0], "the server said nothing"

    _a_new_request()
    replacement = _query()  # no error: the dead connection was closed, a new one made

    assert asked == [False]
    assert replacement != backend


def test_a_connection_in_a_transaction_gets_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    _query()
    asked = _checked(monkeypatch)
    connection.connection.execute("BEGIN")  # not idle: the poll cannot vouch for it
    try:
        connection.health_check_done = False
        connection.close_if_health_check_failed()
    finally:
        if connection.connection is not None:
            connection.connection.execute("ROLLBACK")
    assert asked == [True]
