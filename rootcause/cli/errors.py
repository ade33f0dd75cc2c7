"""Exit codes of `rootcause diagnose`, and the errors that lead to each."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    NO_FAILURE = 0  # every log read, no known failure found
    DIAGNOSED = 1  # a failure diagnosed in at least one log
    USAGE = 2  # usage or configuration: bad option, token or URL, unreadable or refused file
    QUOTA = 3  # the service's daily allowance is used up (429)
    OUTAGE = 4  # the service unreachable, timed out, or failing (5xx)


# The table `--help`, the README and docs/ci.md show.
EXIT_CODES = """\
| code | meaning |
| --- | --- |
| 0 | no known failure found in the logs |
| 1 | a failure was diagnosed |
| 2 | usage or configuration error: bad option, token (401/403) or URL, unreadable or refused file |
| 3 | the daily diagnosis allowance is used up (429) |
| 4 | the service is unreachable, timed out or failed (5xx) |
"""


class CliError(Exception):
    """A log that could not be diagnosed; the message is for the user, `code` for the shell."""

    code = ExitCode.USAGE


class InputError(CliError):
    """A file that cannot be read as a text log, or that the service refused."""


class ConfigError(CliError):
    """A token the service refuses, or a URL that is not a rootcause service."""


class QuotaExceeded(CliError):
    code = ExitCode.QUOTA


class ServiceUnavailable(CliError):
    """Unreachable, timed out, a 5xx, or a diagnosis that failed on the service's side."""

    code = ExitCode.OUTAGE


def overall(codes: list[ExitCode]) -> ExitCode:
    """One code for several logs: a usage error first (it needs fixing whatever else happened),
    then a diagnosis, then an outage, then quota; 0 only when every log was read clean."""
    for code in (ExitCode.USAGE, ExitCode.DIAGNOSED, ExitCode.OUTAGE, ExitCode.QUOTA):
        if code in codes:
            return code
    return ExitCode.NO_FAILURE
