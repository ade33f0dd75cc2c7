"""The `rootcause` command's Typer application: `diagnose`, `mask`, and the commands of
`rootcause.live` and `feedback`. Loaded by `rootcause.cli.main` for anything but a plain
`rootcause mask FILE...` (Typer and its parsing cost a tenth of masking a 20 MB log)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

import rootcause.cli as package
from rootcause.cli.errors import EXIT_CODES, CliError, ExitCode
from rootcause.cli.feedback import register as register_feedback
from rootcause.cli.reading import forget_stdin, mask_files
from rootcause.live.commands import register as register_live

# The engine, the results and their formats load when `diagnose` runs: `rootcause mask` and
# `--help` never use them (they were 0.1 s of its 0.2 s of imports).
if TYPE_CHECKING:
    import httpx

    from rootcause.cli.client import Service
    from rootcause.cli.formats import Emitter
    from rootcause.cli.progress import Reporter
    from rootcause.cli.results import FileResult

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="\n\n".join((package.__doc__ or "").split("\n\n")[:2]),
    rich_markup_mode="markdown",
)

Files = Annotated[list[str], typer.Argument(help="log files; '-' reads standard input")]


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    junit = "junit"


DIAGNOSE_HELP = f"""Diagnose failed training logs.

Big logs are not sent whole: the evidence the service's engine reads (tracebacks, error
windows, each rank's last lines) is picked out here and only that is uploaded; `--full` sends
everything. Each file is its own diagnosis, with its own Idempotency-Key derived from
`--idempotency-key` and the file name; `--merge` makes the files the ranks of one job.

Exit codes (with several files: 2 first, then 1, 4, 3; `--allow-outage` turns 3 and 4 into 0):

{EXIT_CODES}"""


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"rootcause {version('rootcause')}")
        except PackageNotFoundError:
            typer.echo("rootcause (not installed)")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """The options before the command."""


@app.command(help=DIAGNOSE_HELP)
def diagnose(
    files: Files,
    server: Annotated[
        str,
        typer.Option(
            "--server", "--url", envvar="ROOTCAUSE_URL", help="the service, without --offline"
        ),
    ] = "",
    token: Annotated[
        str,
        typer.Option(
            envvar="ROOTCAUSE_TOKEN",
            help="an API token; without one the service's anonymous allowance applies",
        ),
    ] = "",
    wait: Annotated[
        float, typer.Option(min=0, help="seconds to wait for each diagnosis before exit code 4")
    ] = 300,
    fmt: Annotated[
        Format, typer.Option("--format", help="text, json (one object per line), github, junit")
    ] = Format.text,
    as_json: Annotated[bool, typer.Option("--json", help="the same as --format json")] = False,
    full: Annotated[
        bool, typer.Option("--full", help="upload big logs whole, not their evidence")
    ] = False,
    allow_outage: Annotated[
        bool,
        typer.Option(
            "--allow-outage", help="exit 0 with a warning when the service is out or over quota"
        ),
    ] = False,
    idempotency_key_: Annotated[
        str,
        typer.Option(
            "--idempotency-key",
            help="e.g. the CI job id: a retry never makes a second diagnosis of the same file",
        ),
    ] = "",
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", help="a label the service shows in the history (repeatable)"),
    ] = None,
    offline: Annotated[bool, typer.Option("--offline", help="diagnose in this process")] = False,
    merge: Annotated[
        bool, typer.Option("--merge", help="the files are the ranks of one job")
    ] = False,
) -> None:
    from rootcause.cli.formats import Emitter

    forget_stdin()
    if files.count("-") > 1:
        _usage("'-' (standard input) can be given once")
    emitter = Emitter((Format.json if as_json else fmt).value, server.rstrip("/"))
    if offline:
        _diagnose_offline(files, merge, emitter)
    else:
        if not server:
            _usage(
                "set ROOTCAUSE_URL (or --server) to use the service, or pass --offline to "
                "diagnose on this machine"
            )
        # imported here: httpx is most of the start-up time, and --offline never talks HTTP
        from rootcause.cli.client import Service, ci_metadata
        from rootcause.cli.progress import reporter

        try:
            service = Service(server, token, wait, metadata=ci_metadata(labels))
        except CliError as exc:
            _usage(str(exc))
        with reporter() as progress:
            _diagnose_online(
                files,
                service,
                progress,
                emitter,
                merge=merge,
                full=full,
                key=idempotency_key_,
                allow_outage=allow_outage,
            )
    raise typer.Exit(emitter.finish())


def _usage(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(ExitCode.USAGE)


def _failed(emitter: Emitter, file: str, error: CliError, *, allow_outage: bool = False) -> None:
    from rootcause.cli.results import Outcome

    allowed = allow_outage and error.code in (ExitCode.QUOTA, ExitCode.OUTAGE)
    if allowed:
        typer.echo(f"warning: {error} (--allow-outage: not failing)", err=True)
    else:
        typer.echo(f"error: {error}", err=True)
    emitter.add(Outcome(file, error=error, allowed=allowed))


def _diagnose_offline(files: list[str], merge: bool, emitter: Emitter) -> None:
    from rootcause.cli.offline import (
        diagnose_bundle_path,
        diagnose_merged,
        diagnose_path,
        is_bundle,
    )
    from rootcause.cli.results import Outcome

    engine = package.get_engine()
    if merge:
        try:
            emitter.add(Outcome(",".join(files), diagnose_merged(files, engine)))
        except CliError as exc:
            _failed(emitter, ",".join(files), exc)
        return
    for path in files:
        try:
            if is_bundle(path):
                emitter.add(Outcome(path, diagnose_bundle_path(path, engine)))
                continue
            emitter.add(Outcome(path, diagnose_path(path, engine)))
        except CliError as exc:
            _failed(emitter, path, exc)


def _diagnose_online(
    files: list[str],
    service: Service,
    progress: Reporter,
    emitter: Emitter,
    *,
    merge: bool,
    full: bool,
    key: str,
    allow_outage: bool,
) -> None:
    from rootcause.cli.results import Outcome

    jobs = [files] if merge else [[path] for path in files]
    with service.client() as client:
        for paths in jobs:
            label = ",".join(paths)
            try:
                result = _diagnose_job(
                    paths, service, client, progress, merge=merge, full=full, key=key
                )
            except CliError as exc:
                _failed(emitter, label, exc, allow_outage=allow_outage)
                continue
            emitter.add(Outcome(label, result))


def _diagnose_job(
    paths: list[str],
    service: Service,
    client: httpx.Client,
    progress: Reporter,
    *,
    merge: bool,
    full: bool,
    key: str,
) -> FileResult:
    """One file, or the merged files of one job: prepared, uploaded, waited for."""
    from rootcause.cli.client import Record, idempotency_key, submit, wait_for
    from rootcause.cli.inputs import display_name, prepare, prepare_bundle, prepare_merged
    from rootcause.cli.offline import is_bundle
    from rootcause.cli.results import from_record, page_link

    name = ",".join(display_name(p) for p in paths)

    def extracting(total: int | None) -> Callable[[int], None]:
        return progress.bar(name, "picking out the evidence", total)

    def moved_on(record: Record) -> None:
        percent = record.get("progress")
        progress.state(
            name, str(record.get("status")), percent if isinstance(percent, int) else None
        )

    try:
        if merge:
            upload = prepare_merged(paths, engine=package.get_engine, full=full)
        elif is_bundle(paths[0]):
            # one job's per-rank files, one diagnosis: the service reads the hang from them
            upload = prepare_bundle(paths[0])
        else:
            upload = prepare(paths[0], engine=package.get_engine, full=full, on_extract=extracting)
        if upload.note:
            progress.note(upload.note)
        with upload.body:
            record, location = submit(
                service,
                client,
                name=name,
                filename=upload.name,
                body=upload.body,
                key=idempotency_key(key, paths),
                on_upload=progress.bar(name, "uploading", upload.size),
            )
        record = wait_for(
            service, client, name=name, record=record, location=location, on_state=moved_on
        )
        link = page_link(service.url, record, location)
        return from_record(record, ",".join(paths), upload.parts, link=link)
    finally:
        progress.done(name)


@app.command()
def mask(files: Files) -> None:
    """Print the masked text exactly as the service would store it."""
    code = mask_files(files)
    if code:
        raise typer.Exit(code)


# `run -- COMMAND` and `watch FILE|DIR`: a job diagnosed while it runs (rootcause/live)
register_live(app)
# `feedback ID --right|--wrong`: was the diagnosis right (rootcause/cli/feedback.py)
register_feedback(app)
