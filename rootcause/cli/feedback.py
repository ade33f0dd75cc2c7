"""`rootcause feedback ID --right|--wrong [--class SLUG] [--note TEXT]`: "Was this right?".

ID is a diagnosis's id, or its link as the result page, the text output or the API gives it (a
visitor's link carries its `?key=`, which the answer needs). The verdict goes to
`POST /api/v1/diagnoses/{id}/feedback`; exit 0 when it was recorded, 2 for a refused answer or
token, 3 over a rate limit, 4 when the service is out.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import parse_qs, urlencode, urlsplit

import typer

from rootcause.cli.errors import ExitCode

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def _fail(message: str, code: ExitCode = ExitCode.USAGE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def target_of(reference: str, server: str, key: str) -> tuple[str, str, str]:
    """(the service, the diagnosis id, the access key) from an id or a diagnosis's link."""
    found = _ID.search(reference)
    if found is None:
        raise _fail(f"{reference!r} is neither a diagnosis id nor a diagnosis's link")
    parts = urlsplit(reference)
    if parts.scheme in ("http", "https") and parts.netloc:
        server = server or f"{parts.scheme}://{parts.netloc}"
        key = key or parse_qs(parts.query).get("key", [""])[0]
    if not server:
        raise _fail("set ROOTCAUSE_URL (or --server), or give the diagnosis's whole link")
    return server.rstrip("/"), found.group(0).lower(), key


def _body(right: bool, wrong: bool, correct_class: str, note: str) -> dict[str, str]:
    if right == wrong:
        raise _fail("say --right or --wrong (one of them)")
    if right and correct_class:
        raise _fail("--class names the right class of a wrong diagnosis: use it with --wrong")
    body = {"verdict": "right" if right else "wrong"}
    if correct_class:
        body["correct_class"] = correct_class
    if note:
        body["note"] = note
    return body


def feedback(
    diagnosis: Annotated[str, typer.Argument(help="the diagnosis's id or its link")],
    right: Annotated[bool, typer.Option("--right", help="the diagnosis was right")] = False,
    wrong: Annotated[bool, typer.Option("--wrong", help="the diagnosis was wrong")] = False,
    correct_class: Annotated[
        str,
        typer.Option(
            "--class",
            help="with --wrong: the right class's slug, or 'none' if the run did not fail",
        ),
    ] = "",
    note: Annotated[str, typer.Option(help="a note for the people who review it")] = "",
    server: Annotated[
        str, typer.Option("--server", "--url", envvar="ROOTCAUSE_URL", help="the service")
    ] = "",
    token: Annotated[str, typer.Option(envvar="ROOTCAUSE_TOKEN", help="an API token")] = "",
    key: Annotated[str, typer.Option(help="a visitor's diagnosis: its access key")] = "",
) -> None:
    body = _body(right, wrong, correct_class, note)
    server, diagnosis_id, key = target_of(diagnosis, server, key)
    # imported here, as for `diagnose`: httpx is most of the start-up time
    import httpx

    from rootcause.cli.client import Service, _detail
    from rootcause.cli.errors import CliError

    try:
        service = Service(server, token)
    except CliError as exc:
        raise _fail(str(exc)) from None
    url = f"{service.url}/api/v1/diagnoses/{diagnosis_id}/feedback"
    if key:
        url += "?" + urlencode({"key": key})
    try:
        with service.client() as client:
            response = client.post(url, json=body)
    except httpx.HTTPError as exc:
        raise _fail(f"cannot reach {service.url} ({exc})", ExitCode.OUTAGE) from None
    status = response.status_code
    if status in (200, 201):
        answer = response.json()
        said = answer["verdict"] + (
            f" (the right class: {answer['correct_class']})" if answer.get("correct_class") else ""
        )
        typer.echo(f"recorded: {said} on diagnosis {diagnosis_id}; thank you")
        return
    detail = _detail(response)
    if status == 429:
        raise _fail(f"too many requests: {detail}", ExitCode.QUOTA)
    if status >= 500:
        raise _fail(f"the service failed ({status}): {detail}", ExitCode.OUTAGE)
    hint = "; a visitor's diagnosis needs its link or --key" if status == 404 and not key else ""
    raise _fail(f"the service refused the answer ({status}): {detail}{hint}")


def register(app: typer.Typer) -> None:
    app.command(help=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1])(feedback)
