"""The intake rule (rootcause.intake, shared with the CLI) over HTTP: a log with a few bad bytes
is diagnosed, input that is not a text log gets a problem and no diagnosis."""

from __future__ import annotations

from typing import Any

import pytest

from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _post(client: Any, body: bytes) -> Any:
    return client.post(URL, data=body, content_type="text/plain")


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ("Ошибка: недостаточно памяти\n".encode("cp1251") * 50, "not UTF-8 text"),
        ("step 1 loss 2.0\n".encode("utf-16"), "UTF-16"),
    ],
)
def test_the_intake_rule_refuses_what_is_not_a_log(acme_api, body, detail):
    response = _post(acme_api, body)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert detail in response.json()["detail"]
    assert Diagnosis.objects.count() == 0


def test_a_few_bad_bytes_at_the_start_are_still_a_log(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, b"Schl\xfcssel gel\xf6scht\n" + OOM_LOG.encode())

    assert response.status_code == 202, response.content
    body = acme_api.get(response["Location"]).json()
    assert body["failure"]["slug"] == "optimizer-state-oom"
