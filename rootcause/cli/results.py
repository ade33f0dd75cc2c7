"""What `diagnose` concluded per log: the typed result with its file, or why there is none."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlencode, urlsplit

import msgspec
from msgspec import UNSET, UnsetType

from rootcause.cli.errors import CliError, ConfigError, ExitCode
from rootcause.jsonvalue import JSONObject
from rootcause.result import DiagnosisResult, EvidenceLine, RankRow


@dataclass(frozen=True, kw_only=True)
class FileResult(DiagnosisResult):
    """What `diagnose` prints for one file (or for the merged files of one job)."""

    file: str  # the path given, or the paths joined by commas for --merge
    # the diagnosis in the service's history, when the service diagnosed the file
    id: str | UnsetType = UNSET
    # its page on the service (with the access key, for a visitor's): where to read it, share
    # it, and say whether it was right
    link: str | UnsetType = UNSET


@dataclass(frozen=True)
class Outcome:
    """One log (or one merged job): its result, or the error that stopped it."""

    file: str
    result: FileResult | None = None
    error: CliError | None = None
    allowed: bool = False  # an outage or quota error that --allow-outage lets pass

    @property
    def code(self) -> ExitCode:
        if self.error is not None:
            return ExitCode.NO_FAILURE if self.allowed else self.error.code
        assert self.result is not None
        return ExitCode.DIAGNOSED if self.result.outcome == "diagnosed" else ExitCode.NO_FAILURE


def page_link(server: str, record: JSONObject, location: str) -> str:
    """The diagnosis's page: /diagnoses/<id>/, with the key a visitor's Location carries."""
    key = parse_qs(urlsplit(location).query).get("key", [""])[0]
    link = f"{server.rstrip('/')}/diagnoses/{record.get('id', '')}/"
    return link + (f"?{urlencode({'key': key})}" if key else "")


def from_record(
    record: JSONObject,
    file: str,
    parts: list[tuple[str, int, int]] | None = None,
    *,
    link: str = "",
) -> FileResult:
    """The service's record read back as the typed result (its other fields are left out).

    `parts` are the merged logs of one upload (file, first line, lines): each evidence line and
    each rank's first error line gets its own file's numbering back.
    """
    try:
        fields = {**record, "file": file, **({"link": link} if link else {})}
        result = msgspec.convert(fields, type=FileResult)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{file}: the service answered an unexpected result ({exc})") from None
    if not parts:
        return result

    def where(line: int) -> tuple[str, int]:
        for name, start, count in parts:
            if start < line <= start + count:
                return name, line - start
        return parts[-1][0], line

    evidence = [
        EvidenceLine(file=where(e.line)[0], line=where(e.line)[1], text=e.text)
        for e in result.evidence
    ]
    ranks = [
        RankRow(
            rank=r.rank,
            slug=r.slug,
            first_error_line=where(r.first_error_line)[1],
            collateral=r.collateral,
        )
        for r in result.ranks
    ]
    return replace(result, evidence=evidence, ranks=ranks)
