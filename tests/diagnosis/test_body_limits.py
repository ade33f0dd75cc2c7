"""Bodies held in memory are bounded before they are read (plumbing/bodies.py): JSON by size
(413, naming the streamed forms), large forms by a slot of the process (503 past it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from plumbing.bodies import BUFFERED
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


@override_settings(JSON_MAX_BODY_BYTES=2048)
def test_a_json_body_over_its_limit_is_413_and_names_the_other_forms(acme_api: Any) -> None:
    small = acme_api.post(URL, data={"log": OOM_LOG[:1500]}, format="json")
    assert small.status_code == 202, small.content[:300]

    large = acme_api.post(
        URL, data=json.dumps({"log": OOM_LOG * 2}), content_type="application/json"
    )

    assert large.status_code == 413
    assert large["Content-Type"] == "application/problem+json"
    body = large.json()
    assert body["type"].endswith("/payload-too-large")
    assert "text/plain" in body["detail"]
    assert "multipart/form-data" in body["detail"]


@override_settings(BUFFERED_BODY_MIN_BYTES=1024, BUFFERED_BODIES_PER_PROCESS=1)
def test_a_large_form_waits_for_no_slot_it_is_503_with_retry_after(acme_api: Any) -> None:
    with BUFFERED.take(1) as taken:  # another large form is being read in this process
        assert taken
        busy = acme_api.post(URL, data={"file": _upload()}, format="multipart")
        # Raw bodies are streamed: no slot is needed, even for an urlencoded one (curl's default).
        raw = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")
        curl = acme_api.post(
            URL, data=OOM_LOG.encode(), content_type="application/x-www-form-urlencoded"
        )
    assert busy.status_code == 503
    assert busy.json()["type"].endswith("/server-busy")
    assert int(busy["Retry-After"]) > 0
    assert raw.status_code == 202
    assert curl.status_code == 202
    # The same form goes through once the slot is free.
    assert acme_api.post(URL, data={"file": _upload()}, format="multipart").status_code == 202
    assert BUFFERED.held == 0


def _upload() -> Any:
    return _file(OOM_LOG.encode())


def test_a_forms_file_is_read_in_pieces_once(acme_api: Any) -> None:
    big = (OOM_LOG * 2000).encode()  # over one piece (1 MiB)
    response = acme_api.post(URL, data={"file": _file(big)}, format="multipart")
    assert response.status_code == 202, response.content[:300]
    assert response.json()["size_bytes"] == len(big)


def _file(data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile("big.log", data, content_type="text/plain")
