"""`rootcause`: the diagnosis engine on the command line.

`rootcause diagnose FILE... --offline` masks, matches and remediates in this process with the
catalogue shipped in the package; nothing leaves the machine. Without `--offline` the files are
posted to a rootcause service (`--url` / ROOTCAUSE_URL, `--token` / ROOTCAUSE_TOKEN), which masks
them first and keeps the result in the organisation's history. `rootcause mask FILE...` prints the
masked text exactly as the service would store it. `-` reads standard input, `.gz` is unpacked.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import httpx
import msgspec
import typer
from msgspec import UNSET, UnsetType

from rootcause.engine import Engine, get_engine
from rootcause.intake import SNIFF_BYTES, not_a_log
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PIECE = 1 << 20


Files = Annotated[list[str], typer.Argument(help="log files; '-' reads standard input")]


class InputError(Exception):
    """A file that cannot be read as a text log; the message is for the user."""


@dataclass(frozen=True, kw_only=True)
class FileResult(DiagnosisResult):
    """What `diagnose` prints for one file (or for the merged files of one job)."""

    file: str  # the path given, or the paths joined by commas for --merge
    # the diagnosis in the service's history, when the service diagnosed the file
    id: str | UnsetType = UNSET


def _refuse_if_not_a_log(head: bytes, name: str) -> None:
    reason = not_a_log(head)
    if reason:
        raise InputError(f"{name}: {reason}")


def raw_pieces(path: str) -> Iterator[bytes]:
    """The file's bytes in pieces; InputError is raised before the first piece is yielded."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            stream: Any = sys.stdin.buffer
        elif path.endswith(".gz"):
            stream = gzip.open(path, "rb")  # noqa: SIM115
        else:
            # closed by _rest when the pieces have been read
            stream = open(path, "rb")  # noqa: SIM115
        first = stream.read(PIECE)
    except FileNotFoundError as exc:
        raise InputError(f"{name}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{name}: is a directory") from exc
    except PermissionError as exc:
        raise InputError(f"{name}: permission denied") from exc
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        raise InputError(f"{name}: cannot be read ({exc})") from exc
    _refuse_if_not_a_log(first, name)
    return _rest(stream, first, name)


def _rest(stream: Any, first: bytes, name: str) -> Iterator[bytes]:
    try:
        if first:
            yield first
        while True:
            try:
                piece = stream.read(PIECE)
            except (gzip.BadGzipFile, EOFError, OSError) as exc:
                raise InputError(f"{name}: cannot be read ({exc})") from exc
            if not piece:
                return
            yield piece
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def masked_chunks(pieces: Iterable[bytes], counts: dict[str, int]) -> Iterator[str]:
    """Line-aligned masked chunks; `counts` receives the masking counts as masking goes."""
    from rootcause.masking import Masker, iter_line_chunks

    masker = Masker()
    for chunk in iter_line_chunks(pieces):
        yield masker.mask(chunk)
        counts.clear()
        counts.update(masker.counts)


def diagnose_path(path: str, engine: Engine) -> FileResult:
    """What `diagnose --offline` computes for one file (also used by `make eval`)."""
    counts: dict[str, int] = {}
    result = engine.diagnose(masked_chunks(raw_pieces(path), counts))
    return _completed(result, engine, counts, path)


def diagnose_merged(paths: list[str], engine: Engine) -> FileResult:
    counts: dict[str, int] = {}
    sources = [(p, masked_chunks(raw_pieces(p), counts)) for p in paths]
    result = engine.diagnose_sources(sources)
    return _completed(result, engine, counts, ",".join(paths))


def _completed(
    result: DiagnosisResult, engine: Engine, counts: dict[str, int], name: str
) -> FileResult:
    """Stage 3 offline: the fix is always included on the user's own machine."""
    entry = engine.by_slug[result.failure.slug] if result.failure else None
    completed = complete_result(result, entry=entry, include_fix=True, masking=counts)
    return FileResult(**vars(completed), file=name)


def render(result: FileResult) -> str:
    out = [f"== {result.file}"]
    if result.failure is None:
        out.append("no known failure matched")
    else:
        f = result.failure
        out.append(f"class:      {f.slug} ({f.title}, {f.category})")
        out.append(f"confidence: {f.confidence:.2f}")
        out.append(f"root cause: {result.root_cause}")
        rank = result.initiating_rank
        out.append(f"initiating rank: {'n/a (single process)' if rank is None else rank}")
        for c in result.collateral:
            ranks = ", ".join(str(r) for r in c.ranks) or "-"
            out.append(f"collateral: {c.slug} on ranks {ranks}")
    if result.evidence:
        out.append("evidence:")
        out.extend(f"  {e.line:>7}: {e.text}" for e in result.evidence)
    remediation = result.remediation
    if remediation:
        out.append("fix:")
        out.extend(f"  - {step}" for step in remediation.steps)
        out.append(f"  command: {remediation.command}")
        out.append(f"verify: {remediation.verification_command}")
    for fact in result.missing_facts:
        out.append(f"missing: {fact}")
    return "\n".join(out)


POLL_SECONDS = 0.5


def _request_body(path: str) -> tuple[Any, int]:
    """A file object and its size: the API needs a Content-Length, and streams the body to Redis.

    A `.gz` file is sent as it is (the service unpacks it); standard input is read whole first.
    """
    if path == "-":
        data = sys.stdin.buffer.read()
        _refuse_if_not_a_log(data, "<stdin>")
        return io.BytesIO(data), len(data)
    try:
        stream = open(path, "rb")  # noqa: SIM115  (closed by diagnose_online)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    if not path.endswith(".gz"):
        _refuse_if_not_a_log(stream.read(SNIFF_BYTES), path)
        stream.seek(0)
    return stream, os.fstat(stream.fileno()).st_size


def _api_error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except ValueError:
        return response.text[:200]


def diagnose_online(
    path: str, *, url: str, token: str, idempotency_key: str = "", timeout: float = 600
) -> FileResult:
    """Posts one log to the service and waits for its result, read back as the typed result."""
    body, size = _request_body(path)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/octet-stream",
        "Content-Length": str(size),
        "X-Rootcause-Client": "cli",
    }
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    try:
        with httpx.Client(base_url=url.rstrip("/"), timeout=60) as client:
            with body:
                response = client.post("/api/v1/diagnoses", content=body, headers=headers)
            if response.status_code not in (200, 202):
                raise InputError(f"{path}: {response.status_code} {_api_error(response)}")
            location = response.headers["Location"]
            deadline = time.monotonic() + timeout
            result = response.json()
            while result["status"] not in ("done", "failed"):
                if time.monotonic() > deadline:
                    raise InputError(f"{path}: no result after {timeout:.0f} s ({location})")
                time.sleep(POLL_SECONDS)
                polled = client.get(location, headers={"Authorization": f"Bearer {token}"})
                polled.raise_for_status()
                result = polled.json()
    except httpx.HTTPError as exc:
        raise InputError(f"{path}: cannot reach {url} ({exc})") from exc
    if result["status"] == "failed":
        raise InputError(f"{path}: the service failed: {result.get('failure_reason', '')}")
    try:
        # the result's fields and the diagnosis id; the record's other fields are left out
        return msgspec.convert({**result, "file": path}, type=FileResult)
    except msgspec.ValidationError as exc:
        raise InputError(f"{path}: the service answered an unexpected result ({exc})") from None


def _emit(result: FileResult, json_lines: bool) -> None:
    if json_lines:
        typer.echo(json.dumps(msgspec.to_builtins(result), ensure_ascii=False))
    else:
        typer.echo(render(result))


@app.command()
def diagnose(
    files: Files,
    offline: Annotated[bool, typer.Option("--offline", help="diagnose in this process")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per line")] = False,
    merge: Annotated[
        bool, typer.Option("--merge", help="the files are the ranks of one job")
    ] = False,
    url: Annotated[
        str, typer.Option(envvar="ROOTCAUSE_URL", help="the service, without --offline")
    ] = "",
    token: Annotated[
        str, typer.Option(envvar="ROOTCAUSE_TOKEN", help="an organisation's API token")
    ] = "",
    idempotency_key: Annotated[
        str, typer.Option(help="the same key never makes a second diagnosis (CI retries)")
    ] = "",
) -> None:
    """Diagnose failed training logs."""
    if not offline:
        if not (url and token):
            typer.echo(
                "error: set ROOTCAUSE_URL and ROOTCAUSE_TOKEN (or --url/--token) to use the "
                "service, or pass --offline to diagnose on this machine",
                err=True,
            )
            raise typer.Exit(2)
        if merge:
            typer.echo("error: --merge needs --offline", err=True)
            raise typer.Exit(2)
        _diagnose_each(
            files,
            lambda path: diagnose_online(
                path, url=url, token=token, idempotency_key=idempotency_key
            ),
            as_json,
        )
        return
    engine = get_engine()
    if merge:
        try:
            _emit(diagnose_merged(files, engine), as_json)
        except InputError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
    else:
        _diagnose_each(files, lambda path: diagnose_path(path, engine), as_json)


def _diagnose_each(files: list[str], run: Callable[[str], FileResult], as_json: bool) -> None:
    """One result per file; a file that fails is reported and the others still run."""
    failed = False
    for path in files:
        try:
            _emit(run(path), as_json)
        except InputError as exc:
            typer.echo(f"error: {exc}", err=True)
            failed = True
    if failed:
        raise typer.Exit(1)


@app.command()
def mask(files: Files) -> None:
    """Print the masked text exactly as the service would store it."""
    failed = False
    for path in files:
        try:
            counts: dict[str, int] = {}
            for chunk in masked_chunks(raw_pieces(path), counts):
                sys.stdout.write(chunk)
        except InputError as exc:
            typer.echo(f"error: {exc}", err=True)
            failed = True
    sys.stdout.flush()
    if failed:
        raise typer.Exit(1)


def main() -> None:
    app()
