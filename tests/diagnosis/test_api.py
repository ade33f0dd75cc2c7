from __future__ import annotations

import gzip

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from diagnosis.models import Diagnosis
from diagnosis.staging import MASKED, RAW, staging_key
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

# Not transactional: a test's writes are rolled back, never committed, so a test that needs the
# pipeline (enqueued on commit, run eagerly) runs the on-commit callbacks of its request itself.
pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _post(client, body: bytes, **headers):
    return client.post(URL, data=body, content_type="text/plain", **headers)


def test_a_raw_body_is_diagnosed(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, OOM_LOG.encode())

    assert response.status_code == 202, response.content
    assert response["Location"] == f"/api/v1/diagnoses/{response.json()['id']}"
    result = acme_api.get(response["Location"]).json()
    assert result["status"] == "done"
    assert result["outcome"] == "diagnosed"
    assert result["failure"]["slug"] == "optimizer-state-oom"
    assert result["encyclopedia_url"] == "/encyclopedia/optimizer-state-oom/"
    assert result["remediation"]["verification_command"]
    assert result["masking"]["HF_TOKEN"] >= 1


def test_the_result_contains_no_planted_secret(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, OOM_LOG.encode())

    body = acme_api.get(response["Location"]).content.decode()
    for value in PLANTED_SECRETS.values():
        assert value not in body


def test_staged_keys_are_gone_once_the_diagnosis_is_done(
    acme_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, OOM_LOG.encode())

    client = redis.Redis.from_url(settings.REDIS_URL)
    diagnosis_id = response.json()["id"]
    assert not client.exists(staging_key(RAW, diagnosis_id))
    assert not client.exists(staging_key(MASKED, diagnosis_id))


def test_a_multipart_upload_keeps_only_the_base_name(acme_api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("../../etc/run-17.log", OOM_LOG.encode())
    response = acme_api.post(URL, {"file": upload}, format="multipart")

    assert response.status_code == 202, response.content
    assert response.json()["filename"] == "run-17.log"


def test_a_gzip_body_is_decompressed(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(
            URL, data=gzip.compress(OOM_LOG.encode()), content_type="application/octet-stream"
        )

    assert response.status_code == 202, response.content
    assert acme_api.get(response["Location"]).json()["failure"]["slug"] == "optimizer-state-oom"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02binary\x00" * 100, "binary"),
        (b"PK\x03\x04zipped", "binary"),
        (b"\x1f\x8bnot really gzip", "gzip"),
    ],
)
def test_bad_bodies_get_a_problem_and_no_row(acme_api, body, detail):
    response = _post(acme_api, body)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert detail in response.json()["detail"]
    assert Diagnosis.objects.count() == 0


@override_settings(ROOTCAUSE_MAX_LOG_BYTES=2048)
def test_an_oversized_log_is_refused_and_nothing_is_staged(acme_api):
    response = _post(acme_api, b"x" * 1000 + b"\n" + b"y" * 4000)

    assert response.status_code == 413
    assert response["Content-Type"] == "application/problem+json"
    assert Diagnosis.objects.count() == 0
    assert not redis.Redis.from_url(settings.REDIS_URL).keys(staging_key(RAW, "*"))


@override_settings(ROOTCAUSE_MAX_LOG_BYTES=4096)
def test_a_gzip_bomb_is_refused_after_decompression(acme_api):
    response = _post(acme_api, gzip.compress(b"A" * 10_000_000))

    assert response.status_code == 413


def test_invalid_utf8_is_diagnosed_not_rejected(acme_api, django_capture_on_commit_callbacks):
    body = OOM_LOG.encode() + b"\xff\xfe broken bytes \xc3\x28\n"

    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, body)

    assert response.status_code == 202
    assert acme_api.get(response["Location"]).json()["status"] == "done"


def test_one_ten_megabyte_line_is_handled(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(acme_api, b"a" * (10 * 1024 * 1024) + b"\n" + OOM_LOG.encode())

    assert response.status_code == 202
    result = acme_api.get(response["Location"]).json()
    assert result["status"] == "done"
    assert result["failure"]["slug"] == "optimizer-state-oom"


def test_the_same_idempotency_key_returns_the_same_diagnosis(acme_api):
    first = _post(acme_api, OOM_LOG.encode(), HTTP_IDEMPOTENCY_KEY="ci-job-42")
    second = _post(acme_api, OOM_LOG.encode(), HTTP_IDEMPOTENCY_KEY="ci-job-42")

    assert first.status_code == 202
    assert second.status_code == 200
    assert first.json()["id"] == second.json()["id"]
    assert Diagnosis.objects.count() == 1


def test_another_organisation_gets_404(acme_api, umbrella_api):
    diagnosis_id = _post(acme_api, OOM_LOG.encode()).json()["id"]

    response = umbrella_api.get(f"{URL}/{diagnosis_id}")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert diagnosis_id not in response.content.decode()


def test_an_unknown_id_gets_404(acme_api):
    assert acme_api.get(f"{URL}/00000000-0000-0000-0000-000000000000").status_code == 404


def test_a_revoked_or_wrong_token_is_refused(api, acme_token):
    api.credentials(HTTP_AUTHORIZATION="Bearer rc_not-a-real-token")

    response = _post(api, OOM_LOG.encode())

    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert Diagnosis.objects.count() == 0


def test_a_signed_in_member_sees_the_organisation_history(acme_api, bob, api):
    _post(acme_api, OOM_LOG.encode())
    api.force_authenticate(bob)

    response = api.get(URL)

    assert response.status_code == 200
    assert len(response.json()["results"]) == 1


def test_the_file_name_is_masked_like_the_log(acme_api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    name = f"run-of-{PLANTED_SECRETS['email']}.log"
    response = acme_api.post(URL, {"file": SimpleUploadedFile(name, OOM_LOG.encode())})

    assert response.status_code == 202, response.content
    assert PLANTED_SECRETS["email"] not in response.json()["filename"]
    assert "<EMAIL_1>" in response.json()["filename"]
