"""`manage.py export_feedback DIR [--accepted-only]`: the verdicts as a labelled corpus.

Each verdict that names a class (right, or wrong with the right class given) becomes DIR/<file>.log
holding its diagnosis's masked evidence, labelled in DIR/labels.jsonl as the shared corpora are;
`python -m bench.eval --corpus DIR` scores the engine on it. Staff's rejected verdicts are left
out; --accepted-only keeps only those staff accepted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec
from django.core.management.base import BaseCommand

from feedback.export import export_feedback


class Options(msgspec.Struct):
    """The arguments Django hands to handle() as a dict, read as the types argparse made."""

    directory: Path
    accepted_only: bool


class Command(BaseCommand):
    help = "Write the verdicts on diagnoses as a labelled corpus that `make eval` reads."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument(
            "--accepted-only", action="store_true", help="only verdicts staff accepted"
        )

    def handle(self, *args: object, **options: object) -> None:
        asked = msgspec.convert(options, Options)
        directory = asked.directory
        done = export_feedback(directory, accepted_only=asked.accepted_only)
        self.stdout.write(
            f"wrote {done.written} labelled logs to {directory}"
            + (f" ({done.skipped} without evidence left out)" if done.skipped else "")
        )
        self.stdout.write(f"score them: python -m bench.eval --corpus {directory}")
