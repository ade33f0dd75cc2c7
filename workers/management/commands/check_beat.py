"""`manage.py check_beat [--max-age S]`: the beat's health check.

Beat sends the staging sweep every STAGING_SWEEP_SECONDS; the worker that runs it records the
time in the shared cache (diagnosis.services.record_sweep). A recent record proves that beat is
scheduling and that its tasks reach a worker through Redis. Exit status 0 or 1.
"""

from __future__ import annotations

import argparse

import msgspec
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from diagnosis.services import last_sweep_age


class Options(msgspec.Struct):
    """The arguments Django hands to handle() as a dict, read as the types argparse made."""

    max_age: float


class Command(BaseCommand):
    help = "Exit 0 if the periodic staging sweep ran recently, else 1."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--max-age",
            type=float,
            default=max(90.0, 4.0 * settings.STAGING_SWEEP_SECONDS),
            help="seconds since the last sweep beyond which beat is unhealthy",
        )

    def handle(self, *args: object, **options: object) -> None:
        max_age = msgspec.convert(options, Options).max_age
        age = last_sweep_age()
        if age is None or age > max_age:
            seen = "never" if age is None else f"{age:.0f} s ago"
            raise CommandError(f"the staging sweep last ran {seen}: beat or the workers are down")
        self.stdout.write(f"the staging sweep ran {age:.0f} s ago")
