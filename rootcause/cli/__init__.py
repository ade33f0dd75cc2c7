"""`rootcause`: the diagnosis engine on the command line.

`rootcause diagnose FILE... --offline` masks, matches and remediates in this process with the
catalogue shipped in the package; nothing leaves the machine. Without `--offline` the files are
posted to a rootcause service (`--server` / ROOTCAUSE_URL; `--token` / ROOTCAUSE_TOKEN, or none
for the anonymous allowance), which masks them first and keeps the result in the organisation's
history. `rootcause mask FILE...` prints the masked text exactly as the service would store it.
`-` reads standard input, `.gz` is unpacked.

The package: `reading` reads the files (with the masking, all that `mask` imports), `inputs`
builds uploads, `extract` picks the evidence out of a big log, `client` talks HTTP, `offline`
runs the engine here, `formats` writes the results, `progress` shows what is happening on
standard error, `errors` holds the exit codes. What `diagnose` alone uses is imported when it
runs.
`rootcause run` and `rootcause watch` live in `rootcause.live`. The Typer application is
`commands`, loaded on first use: `rootcause mask FILE...` runs without it (`main`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # the names __getattr__ gives, for the type checker
    from rootcause.cli.commands import app
    from rootcause.cli.errors import CliError, InputError
    from rootcause.cli.formats import render_text
    from rootcause.cli.offline import diagnose_merged, diagnose_path
    from rootcause.cli.reading import masked_chunks, raw_pieces
    from rootcause.cli.results import FileResult
    from rootcause.engine import Engine

# what `from rootcause.cli import NAME` finds in a module loaded on first use (__getattr__);
# any other name is the Typer application's module's (`commands`)
_LAZY = {
    "CliError": "rootcause.cli.errors",
    "InputError": "rootcause.cli.errors",
    "masked_chunks": "rootcause.cli.reading",
    "raw_pieces": "rootcause.cli.reading",
    "FileResult": "rootcause.cli.results",
    "diagnose_merged": "rootcause.cli.offline",
    "diagnose_path": "rootcause.cli.offline",
    "render_text": "rootcause.cli.formats",
}


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_LAZY.get(name, "rootcause.cli.commands"))
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def get_engine() -> Engine:
    """The shipped catalogue's engine (built once a process); tests replace this."""
    from rootcause.engine import get_engine as engine

    return engine()


__all__ = [
    "CliError",
    "FileResult",
    "InputError",
    "app",
    "diagnose_merged",
    "diagnose_path",
    "main",
    "masked_chunks",
    "raw_pieces",
    "render_text",
]


def main() -> None:
    args = sys.argv[1:]
    if _plain_mask(args):
        # Typer (0.1 s to import) and its parsing, which imports pydantic to coerce any
        # parameter (0.17 s), were a tenth of masking issue 33's 20 MB log: `rootcause mask`
        # given only file names does what its command does without them, and exits as Typer
        # would (0; 2 for an unreadable file; 130 on ^C; 1 when the reader went away).
        sys.exit(_mask_exit(args[1:]))
    from rootcause.cli.commands import app

    app()


def _plain_mask(args: list[str]) -> bool:
    """`mask` and file names only (no option, nothing Typer would read otherwise)."""
    if len(args) < 2 or args[0] != "mask":
        return False
    if any(name.endswith("_COMPLETE") for name in os.environ):  # shell completion
        return False
    return all(a == "-" or not a.startswith("-") for a in args[1:])


def _mask_exit(files: list[str]) -> int:
    from rootcause.cli.reading import mask_files

    try:
        return mask_files(files)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # as Typer does: exit 1 without a traceback when the reader went away (`| head`);
        # the interpreter's last flush goes to /dev/null (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
