"""`manage.py check_worker [--worker NAME] [--timeout S]`: the worker's health check.

A ping over Celery's control channel is answered by the worker's main process even when it
consumes nothing (after a broker reconnection that lost its consumer, say). This sends a no-op task
to the worker's own queue (CELERY_WORKER_DIRECT) and waits for its result, so it passes only if
this worker takes tasks from Redis, runs them and stores their results. Exit status 0 or 1.
"""

from __future__ import annotations

import argparse
import socket

import msgspec
from celery.utils import worker_direct
from django.core.management.base import BaseCommand, CommandError

from config.celery import ping


class Options(msgspec.Struct):
    """The arguments Django hands to handle() as a dict, read as the types argparse made."""

    worker: str
    timeout: float


class Command(BaseCommand):
    help = "Exit 0 if the named Celery worker consumes a task within the timeout, else 1."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--worker",
            default=f"celery@{socket.gethostname()}",
            help="the worker's node name (default: celery@<this host>, as celery names it)",
        )
        parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait")

    def handle(self, *args: object, **options: object) -> None:
        parsed = msgspec.convert(options, Options)
        worker, timeout = parsed.worker, parsed.timeout
        token = f"alive:{worker}"
        result = ping.apply_async(
            args=(token,),
            queue=worker_direct(worker),
            # A check nobody ran in time is dropped, not run later by a recovering worker.
            expires=timeout,
        )
        try:
            answer = result.get(timeout=timeout)
        except Exception as exc:  # a timeout, a broker or backend error: all mean "not healthy"
            raise CommandError(
                f"{worker} did not run a task in {timeout:g} s ({type(exc).__name__})"
            ) from None
        finally:
            result.forget()
        if answer != token:  # pragma: no cover - the no-op answers its argument
            raise CommandError(f"{worker} answered {answer!r}")
        self.stdout.write(f"{worker} consumes tasks")
