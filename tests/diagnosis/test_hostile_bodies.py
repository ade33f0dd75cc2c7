"""Bodies cut short, gzip streams cut short or in several members, chunked uploads."""

from __future__ import annotations

import gzip
import http.client
import io
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import override_settings

from plumbing.problems import PROBLEM_CONTENT_TYPE
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
BENIGN = "epoch 1 step 10 loss 2.31\n" * 200


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:400]
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    body: dict[str, Any] = response.json()
    return body


def _raw(client: Any, body: bytes, **environ: Any) -> Any:
    return client.generic(
        "POST", URL, data=body, content_type="application/octet-stream", **environ
    )


def test_a_body_shorter_than_its_content_length_is_refused(acme_api: Any) -> None:
    body = OOM_LOG.encode()
    # The client went away after what it sent: the stream ends before Content-Length.
    response = _raw(
        acme_api, b"", CONTENT_LENGTH=str(len(body) + 5000), **{"wsgi.input": io.BytesIO(body)}
    )
    detail = _problem(response, 400)["detail"]
    assert f"{len(body)} of the {len(body) + 5000} bytes" in detail


def test_a_truncated_gzip_stream_is_refused(acme_api: Any) -> None:
    packed = gzip.compress(OOM_LOG.encode())
    detail = _problem(_raw(acme_api, packed[: len(packed) // 2]), 400)["detail"]
    assert "truncated" in detail


def test_a_gzip_without_its_trailer_is_refused(acme_api: Any) -> None:
    packed = gzip.compress(OOM_LOG.encode())
    _problem(_raw(acme_api, packed[:-4]), 400)  # the size field of the trailer is missing


def test_every_member_of_a_gzip_is_read(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # `cat head.gz tail.gz`: the failure is in the second member.
    packed = gzip.compress(BENIGN.encode()) + gzip.compress(OOM_LOG.encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = _raw(acme_api, packed)
    assert response.status_code == 202, response.content
    result = acme_api.get(response["Location"]).json()
    assert result["status"] == "done"
    assert result["failure"]["slug"] == "optimizer-state-oom"


def test_zero_padding_after_the_last_member_is_ignored(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = _raw(acme_api, gzip.compress(OOM_LOG.encode()) + b"\0" * 512)
    assert response.status_code == 202, response.content


def test_garbage_after_a_member_is_refused(acme_api: Any) -> None:
    _problem(_raw(acme_api, gzip.compress(OOM_LOG.encode()) + b"not gzip"), 400)


def _chunked(body: bytes, *, terminated: bool) -> dict[str, Any]:
    # What gunicorn hands over for Transfer-Encoding: chunked: no CONTENT_LENGTH, the decoded
    # body on wsgi.input, and wsgi.input_terminated set.
    environ: dict[str, Any] = {
        "CONTENT_LENGTH": "",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": io.BytesIO(body),
    }
    if terminated:
        environ["wsgi.input_terminated"] = True
    return environ


def test_a_chunked_upload_is_diagnosed(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = _raw(acme_api, b"", **_chunked(OOM_LOG.encode(), terminated=True))
    assert response.status_code == 202, response.content
    result = acme_api.get(response["Location"]).json()
    assert result["failure"]["slug"] == "optimizer-state-oom"


def test_a_chunked_gzip_upload_is_diagnosed(
    acme_api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    packed = gzip.compress(OOM_LOG.encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = _raw(acme_api, b"", **_chunked(packed, terminated=True))
    assert response.status_code == 202, response.content


def test_a_chunked_upload_over_the_limit_is_413(acme_api: Any) -> None:
    with override_settings(ROOTCAUSE_MAX_LOG_BYTES=10_000):
        response = _raw(acme_api, b"", **_chunked(b"x\n" * 20_000, terminated=True))
    _problem(response, 413)


def test_a_chunked_upload_the_server_did_not_decode_is_411(acme_api: Any) -> None:
    response = _raw(acme_api, b"", **_chunked(OOM_LOG.encode(), terminated=False))
    _problem(response, 411)


@pytest.mark.django_db(transaction=True)
def test_a_chunked_upload_over_a_real_socket(live_server: Any, acme_token: str) -> None:
    """Django's development server does not decode chunked bodies: a clear 411, not "empty"."""
    where = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    connection.request(
        "POST",
        URL,
        body=iter([OOM_LOG.encode()[:100], OOM_LOG.encode()[100:]]),
        headers={
            "Authorization": f"Bearer {acme_token}",
            "Content-Type": "text/plain",
        },
        encode_chunked=True,
    )
    response = connection.getresponse()
    body = response.read()
    connection.close()
    assert response.status == 411, body[:400]
    assert response.getheader("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE)
