"""Run by `make test` first: fail at once, naming what is unreachable, instead of 300 errors."""

from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlsplit

# variable -> (service, default URL, default port); the defaults are those of settings_test.py
SERVICES = {
    "DATABASE_URL": ("PostgreSQL", "postgres://postgres@127.0.0.1:5432/rootcause", 5432),
    "REDIS_URL": ("Redis", "redis://127.0.0.1:6379/15", 6379),
}


def unreachable() -> list[str]:
    problems = []
    for variable, (service, default, default_port) in SERVICES.items():
        url = urlsplit(os.environ.get(variable, default))
        host, port = url.hostname or "127.0.0.1", url.port or default_port
        try:
            socket.create_connection((host, port), timeout=3).close()
        except OSError as exc:
            problems.append(f"{service} at {host}:{port} ({variable}) is unreachable ({exc})")
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
