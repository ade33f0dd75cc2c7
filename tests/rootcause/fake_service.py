"""A small stand-in for the rootcause API, served from a thread, for the client's tests.

It answers like `POST /api/v1/diagnoses` and `GET /api/v1/diagnoses/{id}` do (202 with a
Location, a record that moves through the stages, Idempotency-Key, problem+json errors), and
diagnoses what it receives with the engine over the test catalogue. A test scripts the
exceptions: `fake.post_answers` / `fake.get_answers` hold answers given before the normal ones,
`fake.delay` holds every answer back that many seconds.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rootcause.engine import Engine
from rootcause.masking import Masker, mask_log
from rootcause.remediation import complete_result
from rootcause.result import as_json

API = "/api/v1/diagnoses"


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # field -> (name, content)
    fields: dict[str, list[str]] = field(default_factory=dict)  # a field may repeat


def problem(status: int, detail: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"title": "Error", "status": status, "detail": detail}, headers or {})


class FakeService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.received: list[Received] = []
        self.post_answers: list[Answer] = []
        self.get_answers: list[Answer] = []
        self.delay = 0.0
        self.polls_before_done = 2  # GETs that answer a stage before the result
        self.long_poll = False  # hold a GET with ?wait= until done, as the API will
        self.token = ""  # when set, requests without this Bearer token are 401
        # a visitor (no token) reads a diagnosis with the key its Location carries, as the API
        self.visitor_key = ""
        self.records: dict[str, dict[str, Any]] = {}
        self.keys: dict[str, str] = {}
        self._polls: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def __enter__(self) -> FakeService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def posts(self) -> list[Received]:
        return [r for r in self.received if r.method == "POST"]

    @property
    def gets(self) -> list[Received]:
        return [r for r in self.received if r.method == "GET"]

    def diagnose(self, content: bytes) -> dict[str, Any]:
        if content.startswith(b"\x1f\x8b"):
            content = gzip.decompress(content)
        masker = Masker()  # as the service masks: learn the names first, then mask
        result = self.engine.diagnose(mask_log(lambda: [content], masker))
        entry = self.engine.by_slug[result.failure.slug] if result.failure else None
        return as_json(
            complete_result(result, entry=entry, include_fix=True, masking=masker.counts)
        )

    def post(self, request: Received) -> Answer:
        if self.post_answers:
            return self.post_answers.pop(0)
        if self.token and request.headers.get("authorization") != f"Bearer {self.token}":
            return problem(401, "Invalid token.")
        if "file" not in request.files:
            return problem(400, "Send the log as the `file` field of the form.")
        name, content = request.files["file"]
        if not content:
            return problem(400, "The log is empty.")
        key = request.headers.get("idempotency-key", "")
        with self._lock:
            if key and key in self.keys:
                record = self.records[self.keys[key]]
                body = _public(record)
                if record["status"] == "done":
                    body.update(record["_result"])
                return Answer(200, body, {"Location": f"{API}/{record['id']}"})
            diagnosis_id = str(uuid.uuid4())
            record = {
                "id": diagnosis_id,
                "status": "queued",
                "progress": 0,
                "filename": name,
                "size_bytes": len(content),
                "created_at": "2026-12-01T10:00:00Z",
                "finished_at": None,
                "_result": self.diagnose(content),
            }
            self.records[diagnosis_id] = record
            if key:
                self.keys[key] = diagnosis_id
        location = f"{API}/{diagnosis_id}"
        if self.visitor_key and "authorization" not in request.headers:
            location += f"?key={self.visitor_key}"
        return Answer(202, _public(record), {"Location": location})

    def get(self, request: Received, diagnosis_id: str) -> Answer:
        if self.get_answers:
            return self.get_answers.pop(0)
        record = self.records.get(diagnosis_id)
        visitor = "authorization" not in request.headers
        wrong_key = visitor and self.visitor_key and request.query.get("key") != [self.visitor_key]
        if record is None or wrong_key:
            return problem(404, "Not found.")
        with self._lock:
            polls = self._polls[diagnosis_id] = self._polls.get(diagnosis_id, 0) + 1
        done = polls > self.polls_before_done or (self.long_poll and "wait" in request.query)
        if done:
            record.update(status="done", progress=100, finished_at="2026-12-01T10:00:03Z")
            return Answer(200, {**_public(record), **record["_result"]})
        stages = ["masking", "matching", "remediating"]
        record.update(status=stages[min(polls - 1, 2)], progress=33 * polls)
        return Answer(200, _public(record))


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _handler(fake: FakeService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, delayed ACKs cost 40 ms each
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _receive(self) -> Received:
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = Received(self.command, parts.path, parse_qs(parts.query), headers)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if headers.get("content-type", "").startswith("multipart/form-data"):
                message = BytesParser(policy=HTTP).parsebytes(
                    b"Content-Type: " + headers["content-type"].encode() + b"\r\n\r\n" + body
                )
                for part in message.iter_parts():
                    field_name = part.get_param("name", header="content-disposition")
                    payload = part.get_payload(decode=True)
                    content = payload if isinstance(payload, bytes) else b""
                    filename = part.get_filename()
                    if filename is not None:
                        request.files[str(field_name)] = (filename, content)
                    else:
                        request.fields.setdefault(str(field_name), []).append(content.decode())
            fake.received.append(request)
            return request

        def _answer(self, answer: Answer) -> None:
            if fake.delay:
                time.sleep(fake.delay)
            if isinstance(answer.body, str):  # a page, not JSON: not an API
                body = answer.body.encode()
            else:
                body = json.dumps(answer.body).encode() if answer.body is not None else b""
            self.send_response(answer.status)
            content_type = "application/json" if answer.status < 400 else "application/problem+json"
            self.send_header("Content-Type", answer.headers.pop("Content-Type", content_type))
            self.send_header("Content-Length", str(len(body)))
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            request = self._receive()
            if request.path != API:
                self._answer(problem(404, "Not found."))
                return
            self._answer(fake.post(request))

        def do_GET(self) -> None:
            request = self._receive()
            if not request.path.startswith(API + "/"):
                self._answer(problem(404, "Not found."))
                return
            self._answer(fake.get(request, request.path.rsplit("/", 1)[-1]))

    return Handler
