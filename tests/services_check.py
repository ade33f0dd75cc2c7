"""Run by `make test` first: fail at once, naming what is unreachable, instead of 300 errors."""

from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlsplit

DEFAULTS = {
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/rootcause",
    "REDIS_URL": "redis://127.0.0.1:6379/15",
}


def unreachable() -> list[str]:
    problems = []
    for name, default in DEFAULTS.items():
        url = urlsplit(os.environ.get(name, default))
        host, port = (
            url.hostname or "127.0.0.1",
            url.port or (6379 if "redis" in name.lower() else 5432),
        )
        try:
            socket.create_connection((host, port), timeout=3).close()
        except OSError as exc:
            problems.append(f"{name.split('_')[0].title()} at {host}:{port} is unreachable ({exc})")
    return problems


if __name__ == "__main__":
    problems = unreachable()
    for problem in problems:
        print(f"make test: {problem}", file=sys.stderr)
    if problems:
        print(
            "make test needs PostgreSQL and Redis; start them or point DATABASE_URL / REDIS_URL "
            "at running ones (see README).",
            file=sys.stderr,
        )
        sys.exit(1)
