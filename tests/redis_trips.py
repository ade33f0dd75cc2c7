"""Counting what a test sends to Redis: every round trip, as the commands it carried."""

from __future__ import annotations

from typing import Any

import pytest
import redis


def redis_round_trips(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every round trip to Redis from now on (a command, or a pipeline of them), as the commands
    it carried, upper-cased, in order; a script's loading into a server that had not seen it
    left out."""
    trips: list[list[str]] = []
    execute_command = redis.Redis.execute_command
    execute_pipeline = redis.client.Pipeline.execute

    def command(self: redis.Redis, *args: Any, **options: Any) -> Any:
        name = str(args[0]).upper()
        if " ".join(str(a).upper() for a in args[:2]).startswith("SCRIPT LOAD"):
            return execute_command(self, *args, **options)  # once per server, as below
        trips.append([name])
        try:
            return execute_command(self, *args, **options)
        except redis.exceptions.NoScriptError:
            # A script's first use on a Redis that has not seen it: refused, loaded, sent again
            # (redis-py's Script). Once per server, not per request: left out of the count.
            trips.pop()
            raise

    def pipeline(self: redis.client.Pipeline, *args: Any, **options: Any) -> Any:
        trips.append([str(c[0][0]).upper() for c in self.command_stack])
        return execute_pipeline(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline)
    return trips
