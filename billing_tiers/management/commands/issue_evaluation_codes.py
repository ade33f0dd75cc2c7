"""`manage.py issue_evaluation_codes --count N [--days 14] [--daily 50] [--redeem-by DATE]`.

Prints the codes one per line on stdout, the only place they ever appear in clear; a summary goes
to stderr so that `> codes.txt` captures the codes alone.
"""

from __future__ import annotations

import argparse
from datetime import date

import msgspec
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from billing_tiers.services import MAX_CODES_PER_BATCH, issue_evaluation_codes
from billing_tiers.tiers import evaluation_tier
from plumbing.problems import ApplicationError


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


class Options(msgspec.Struct):
    """The arguments Django hands to handle() as a dict, read as the types argparse made."""

    count: int
    days: int | None
    daily: int | None
    redeem_by: date | None
    note: str


class Command(BaseCommand):
    help = "Issue single-use Scale evaluation codes and print them, one per line."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--count", type=int, required=True, help=f"how many (1-{MAX_CODES_PER_BATCH})"
        )
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help=f"length of the evaluation (default {settings.EVALUATION_DAYS})",
        )
        parser.add_argument(
            "--daily",
            type=int,
            default=None,
            help=f"diagnoses a day (default {evaluation_tier().daily_diagnoses})",
        )
        parser.add_argument(
            "--redeem-by",
            type=_date,
            default=None,
            help=f"last UTC day to redeem, YYYY-MM-DD (default in "
            f"{settings.EVALUATION_CODE_VALID_DAYS} days)",
        )
        parser.add_argument("--note", default="", help="a note for staff, shown in the admin")

    def handle(self, *args: object, **options: object) -> None:
        asked = msgspec.convert(options, Options)
        try:
            issued = issue_evaluation_codes(
                count=asked.count,
                days=asked.days,
                daily_limit=asked.daily,
                redeem_by=asked.redeem_by,
                note=asked.note,
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        for item in issued:
            self.stdout.write(item.code)
        first = issued[0].row
        self.stderr.write(
            f"{len(issued)} codes: {first.days} days, {first.daily_limit} a day, "
            f"redeem by {first.redeem_by:%Y-%m-%d}"
        )
