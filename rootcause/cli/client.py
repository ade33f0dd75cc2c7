"""The HTTP client of a rootcause service: submit a log, wait for its diagnosis.

`POST /api/v1/diagnoses` takes the log as the `file` part of a multipart form (the part's file
name is the name the history shows, masked by the service) with an `Idempotency-Key`; the answer
is 202 (or 200 for a key seen before) with the record and a `Location` to poll. Polling asks
`?wait=N` so that a service which long-polls answers when the diagnosis is done; one that does
not answers at once, and the client then sleeps between polls. Without a token no Authorization
header is sent, and the service applies its anonymous allowance.

Every failure becomes one of the errors of `errors.py`, so the exit code says what went wrong:
401/403, a URL that is not a rootcause service, a refused log -> 2; 429 -> 3; unreachable, timed
out, 5xx, or a diagnosis that failed on the service's side -> 4. A submission that met a
connection error or a 502/503/504 is retried (the Idempotency-Key makes that safe).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, cast
from urllib.parse import urljoin, urlsplit

import httpx

from rootcause.cli.errors import (
    CliError,
    ConfigError,
    InputError,
    QuotaExceeded,
    ServiceUnavailable,
)
from rootcause.jsonvalue import JSONObject

API = "/api/v1/diagnoses"
# Submissions retried after a connection error or a 502/503/504, with these pauses.
RETRY_PAUSES = (1.0, 3.0)
# Polling: first pause, growth and ceiling when the service answers at once (no long-poll).
POLL_FIRST, POLL_GROWTH, POLL_MAX = 0.5, 1.5, 5.0
# The longest `?wait=` asked for; the API caps it at 30 s.
LONG_POLL = 30
CONNECT_TIMEOUT = 10.0
# A read or write of the upload that stalls this long is an outage.
IO_TIMEOUT = 60.0
FINAL = ("done", "failed")
# A diagnosis as the service's API answers it (docs/api.md): JSON, read by its known keys.
Record = JSONObject
_TRANSIENT = (502, 503, 504)
# A 429 of this type is no quota: the client has too many requests running at once (long polls,
# uploads); another try after Retry-After goes through.
_TOO_MANY_AT_ONCE = "/too-many-concurrent-requests"
# gaierror numbers for a host name that does not exist (a typo), not a DNS hiccup
_NO_SUCH_HOST = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, n)}


def idempotency_key(key: str, names: list[str]) -> str:
    """The key sent for one upload: the given key (or a random one per run, so that the client's
    own retries are safe) and a digest of the file names, so that each file is its own job."""
    digest = hashlib.sha256("\0".join(names).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{key or 'rootcause-' + uuid.uuid4().hex}:{digest[:16]}"


def ci_metadata(labels: list[str] | None = None) -> dict[str, str | list[str]]:
    """Where the log comes from, when a CI system says so, and the user's labels: sent as form
    fields beside the log (`labels` once per label).

    A service that stores metadata shows them in the history; one that does not ignores them.
    """
    env = os.environ
    fields: dict[str, str | list[str]] = {}
    if env.get("GITHUB_ACTIONS") == "true":
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        if env.get("GITHUB_REPOSITORY") and env.get("GITHUB_RUN_ID"):
            fields["run_url"] = (
                f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
            )
        fields["job"] = env.get("GITHUB_JOB", "")
        fields["commit"] = env.get("GITHUB_SHA", "")
    elif env.get("GITLAB_CI") == "true":
        fields["run_url"] = env.get("CI_JOB_URL", "")
        fields["job"] = env.get("CI_JOB_NAME", "")
        fields["commit"] = env.get("CI_COMMIT_SHA", "")
    fields["labels"] = [label for label in labels or [] if label.strip()]
    return {k: v for k, v in fields.items() if v}


@dataclass
class Service:
    url: str
    token: str = ""
    wait: float = 300.0  # seconds to wait for a diagnosis, upload excluded
    metadata: dict[str, str | list[str]] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{self.url!r} is not a service URL: give one like https://rootcause.example.com"
            )

    def client(self) -> httpx.Client:
        headers = {"X-Rootcause-Client": "cli", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return httpx.Client(
            timeout=httpx.Timeout(IO_TIMEOUT, connect=CONNECT_TIMEOUT),
            headers=headers,
            follow_redirects=False,
            # a request's headers and body are separate writes: without TCP_NODELAY the body
            # can wait for the peer's delayed ACK (40 ms a request)
            transport=httpx.HTTPTransport(
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
            ),
        )


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or body)[:500]
    return str(body)[:500]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _quota_message(name: str, response: httpx.Response) -> str:
    """Whole sentences: the service's own detail, then the limit and the wait its headers give."""
    headers = response.headers
    sentences = [
        f"{name}: the daily diagnosis allowance is used up (429).",
        _sentence(_detail(response)),
    ]
    limit = headers.get("RateLimit-Limit") or headers.get("X-RateLimit-Limit")
    if limit:
        sentences.append(f"The limit is {limit} a day.")
    retry = headers.get("Retry-After")
    if retry:
        sentences.append(f"Retry after {retry} s.")
    return " ".join(s for s in sentences if s)


def error_for(name: str, response: httpx.Response, *, token: bool, submitting: bool) -> CliError:
    """The error an unexpected answer of the service means."""
    status = response.status_code
    detail = _detail(response)
    if status in (401, 403):
        hint = "" if token else "; the service needs a token: set ROOTCAUSE_TOKEN or --token"
        return ConfigError(f"{name}: the service refused the request ({status}): {detail}{hint}")
    if status == 429 and _problem_type(response).endswith(_TOO_MANY_AT_ONCE):
        return ServiceUnavailable(f"{name}: the service is busy with this client (429): {detail}")
    if status == 429:
        return QuotaExceeded(_quota_message(name, response))
    if status >= 500:
        return ServiceUnavailable(f"{name}: the service failed ({status}): {detail}")
    if status in (404, 405) and submitting:
        return ConfigError(
            f"{name}: {response.request.url} answered {status}: is --server / ROOTCAUSE_URL a "
            "rootcause service?"
        )
    if status in (400, 409, 413, 415, 422):
        return InputError(f"{name}: the service refused the log ({status}): {detail}")
    if status < 500 and not submitting:
        return ServiceUnavailable(f"{name}: the diagnosis cannot be read ({status}): {detail}")
    return ConfigError(f"{name}: unexpected answer {status}: {detail}")


def _unreachable(name: str, url: str, exc: httpx.HTTPError) -> CliError:
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__context__
        while cause is not None and not isinstance(cause, socket.gaierror):
            cause = cause.__context__
        if isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_HOST:
            return ConfigError(f"{name}: {urlsplit(url).hostname} does not resolve: check the URL")
    if isinstance(exc, httpx.TimeoutException):
        return ServiceUnavailable(f"{name}: {url} timed out ({type(exc).__name__})")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConfigError(f"{name}: {url} is not a service URL ({exc})")
    return ServiceUnavailable(f"{name}: cannot reach {url} ({exc})")


def _record(name: str, response: httpx.Response, url: str) -> Record:
    try:
        record = response.json()
    except ValueError:
        record = None
    if not isinstance(record, dict) or "status" not in record:
        raise ConfigError(f"{name}: {url} did not answer like a rootcause service")
    return record


class _Counted:
    """A file that reports how much of it has been read (the upload's progress)."""

    def __init__(self, body: IO[bytes], on_read: Callable[[int], None]) -> None:
        self.body, self.on_read = body, on_read

    def read(self, size: int = -1) -> bytes:
        data = self.body.read(size)
        self.on_read(self.body.tell())
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.body.seek(offset, whence)

    def tell(self) -> int:
        return self.body.tell()


def submit(
    service: Service,
    client: httpx.Client,
    *,
    name: str,
    filename: str,
    body: IO[bytes],
    key: str,
    on_upload: Callable[[int], None],
) -> tuple[Record, str]:
    """Posts one log; returns the record and the URL to poll."""
    url = service.url + API
    attempts = len(RETRY_PAUSES) + 1
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            response = client.post(
                url,
                files={
                    "file": (
                        filename,
                        cast(IO[bytes], _Counted(body, on_upload)),
                        "application/octet-stream",
                    )
                },
                data=service.metadata,
                headers={"Idempotency-Key": key},
            )
        except httpx.HTTPError as exc:
            error = _unreachable(name, url, exc)
            if last or not isinstance(error, ServiceUnavailable):
                raise error from None
            service.sleep(RETRY_PAUSES[attempt])
            continue
        if _transient(response) and not last:
            service.sleep(_retry_after(response, RETRY_PAUSES[attempt]))
            continue
        if response.status_code == 409 and attempt:
            # the attempt that failed on the way had made the diagnosis, and a visitor's cannot
            # be read a second time
            raise ServiceUnavailable(f"{name}: lost on the way and not readable again: retry")
        if response.status_code not in (200, 201, 202):
            raise error_for(name, response, token=bool(service.token), submitting=True)
        record = _record(name, response, url)
        location = response.headers.get("Location") or f"{API}/{record.get('id', '')}"
        return record, urljoin(url, location)
    raise AssertionError("unreachable")  # the loop returns or raises


def _transient(response: httpx.Response) -> bool:
    """An answer that another try, a little later, may not get: an outage or a busy service."""
    if response.status_code in _TRANSIENT:
        return True
    return response.status_code == 429 and _problem_type(response).endswith(_TOO_MANY_AT_ONCE)


def _problem_type(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    kind = body.get("type") if isinstance(body, dict) else None
    return kind if isinstance(kind, str) else ""


def _retry_after(response: httpx.Response, default: float) -> float:
    try:
        return min(float(response.headers.get("Retry-After", default)), 30.0)
    except ValueError:
        return default


def wait_for(
    service: Service,
    client: httpx.Client,
    *,
    name: str,
    record: Record,
    location: str,
    on_state: Callable[[Record], None],
) -> Record:
    """Polls until the diagnosis is done or failed, or `service.wait` seconds have passed."""
    deadline = time.monotonic() + service.wait
    pause = POLL_FIRST
    # the token goes only to the service itself, not to another host a Location might name
    same_origin = urlsplit(location)[:2] == urlsplit(service.url)[:2]
    on_state(record)
    while record.get("status") not in FINAL:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ServiceUnavailable(
                f"{name}: no diagnosis after {service.wait:g} s (still {record.get('status')}; "
                f"it will be at {location}); --wait gives it longer"
            )
        asked = max(0, min(LONG_POLL, int(left)))
        started = time.monotonic()
        url = httpx.URL(location)
        request = client.build_request(
            "GET",
            # merged: a visitor's Location carries the key that reads the diagnosis
            url.copy_merge_params({"wait": asked}) if asked else url,
            timeout=httpx.Timeout(asked + IO_TIMEOUT, connect=CONNECT_TIMEOUT),
        )
        if not same_origin:
            request.headers.pop("Authorization", None)
        try:
            response = client.send(request)
        except httpx.HTTPError as exc:
            error = _unreachable(name, location, exc)
            if not isinstance(error, ServiceUnavailable):
                raise error from None
            response = None  # a hiccup while waiting: try again until the deadline
        if response is not None:
            if response.status_code == 200:
                record = _record(name, response, location)
                on_state(record)
            elif not _transient(response):
                raise error_for(name, response, token=bool(service.token), submitting=False)
            elif "Retry-After" in response.headers:
                # busy: as long as it says (the pause below follows only a quick answer)
                service.sleep(min(_retry_after(response, pause), max(0.0, left)))
                continue
        if record.get("status") not in FINAL and time.monotonic() - started < 1.0:
            # the service did not hold the request: it does not long-poll, or it is busy
            service.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * POLL_GROWTH, POLL_MAX)
    if record["status"] == "failed":
        reason = record.get("failure_reason") or "no reason given"
        raise ServiceUnavailable(f"{name}: the service could not diagnose it: {reason}")
    return record
