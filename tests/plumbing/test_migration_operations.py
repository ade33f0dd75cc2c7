"""plumbing/migration_operations.AddIndexConcurrently on PostgreSQL, in a database of the test's own:
built concurrently and valid, undone, and rebuilt over an invalid leftover of a failed build.
(SQLite's plain CREATE INDEX runs whenever the embedded mode migrates: tests/plumbing/test_sql.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.manage_command import manage
from tests.worker import database_url

pytestmark = pytest.mark.e2e  # migrates a whole database: some seconds

# 0009's index, which 0011 replaces (by diagnosis_unfinished_updated): the operation is tested
# up to 0010.
INDEX = "diagnosis_active_updated"


@pytest.fixture
def database() -> Iterator[str]:
    name = f"rootcause_migrations_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(name)
    finally:
        with psycopg.connect(database_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _index(url: str, name: str = INDEX) -> Any:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [name],
        ).fetchone()


def _migrate(url: str, *target: str) -> None:
    result = manage("migrate", *target, "--noinput", "-v", "0", timeout=300, DATABASE_URL=url)
    assert result.returncode == 0, result.stderr


def test_the_index_is_built_concurrently_undone_and_rebuilt_over_an_invalid_leftover(database):
    _migrate(database, "diagnosis", "0010")
    valid, definition = _index(database)
    assert valid
    assert "WHERE" in definition
    assert "queued" in definition

    _migrate(database, "diagnosis", "0008")
    assert _index(database) is None

    # What an interrupted CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE INDEX "{INDEX}" ON diagnosis_diagnosis (status, updated_at)')
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [INDEX]
        )
    _migrate(database, "diagnosis", "0010")

    valid, definition = _index(database)
    assert valid
    assert "WHERE" in definition


def test_the_sweepers_index_is_named_by_what_is_finished(database):
    _migrate(database)

    assert _index(database) is None
    valid, definition = _index(database, "diagnosis_unfinished_updated")
    assert valid
    assert "WHERE" in definition
    assert "done" in definition
    assert "failed" in definition
    assert "queued" not in definition
