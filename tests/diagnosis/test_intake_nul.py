"""A stray NUL in an otherwise textual log is accepted by the API and diagnosed (not 400
binary). Crashing writers leave NULs in logs (owncloud/core#40099, roborescue/rcrs-server#25)."""

from __future__ import annotations

import pytest

from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db


def test_a_log_with_a_stray_nul_is_diagnosed(acme_api, django_capture_on_commit_callbacks):
    text = OOM_LOG.encode()
    cut = text.index(b"Traceback")
    body = text[:cut] + b"\x00\x00" + text[cut:]

    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post("/api/v1/diagnoses", data=body, content_type="text/plain")

    assert response.status_code == 202, response.content
    result = acme_api.get(response["Location"]).json()
    assert result["status"] == "done"
    assert result["failure"]["slug"] == "optimizer-state-oom"
