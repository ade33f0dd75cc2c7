"""Django's PostgreSQL backend, with a health check that asks the server only when it has spoken.

With CONN_HEALTH_CHECKS, Django checks a kept connection before the first query of each request
(and each task) with a `SELECT 1`: a round trip, and a statement for PostgreSQL to run, before
every submission, about 2 % of the web's CPU under `make loadtest` (docs/benchmarks.md,
2026-12-06). An idle connection's server says nothing unless it is going away: a restart, a
terminated backend or a closed socket leaves something to read (the server's FATAL notice, or the
end of the stream). So the socket is polled first, without waiting, and only a connection with
something to read, or one that is not idle, gets Django's own check, which then closes it.
A server that vanished without a word (a cut network) is found as before: by the query.
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        wrapper: Any = self  # the health check's attributes are not in django-stubs
        if (
            wrapper.connection is not None
            and wrapper.health_check_enabled
            and not wrapper.health_check_done
            and not wrapper.pool
            and _quiet(wrapper.connection)
        ):
            wrapper.health_check_done = True
            return
        super().close_if_health_check_failed()


def _quiet(connection: psycopg.Connection[object]) -> bool:  # rows of any type: none is read
    """An open, idle connection whose server has sent nothing since the last answer."""
    if connection.closed or connection.info.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)
