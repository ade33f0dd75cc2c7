"""The API as a CI job uses it: three forms of body with metadata, Idempotency-Key for 24 hours,
?wait=, and errors as problem+json with stable types."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from billing_tiers.models import QuotaCharge, QuotaUsage
from diagnosis import selectors
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
LOG = OOM_LOG.encode()
PROBLEMS = "https://rootcause.dev/problems/"
# What a CI job may say about itself that must not be stored as is.
JOB = "train (jane@gpu-node-17.contoso-research.com)"
RUN_URL = "https://ci.contoso-research.com/ml/train/-/jobs/99"


def _used(organization) -> int:
    return sum(
        QuotaUsage.objects.filter(subject=f"org:{organization.pk}").values_list("used", flat=True)
    )


def _raw(client, body: bytes = LOG, **headers):
    return client.post(URL, data=body, content_type="text/plain", **headers)


def _problem(response, status: int, slug: str, title: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == PROBLEMS + slug
    assert body["title"] == title
    assert body["status"] == status
    assert body["detail"]
    assert "{" not in body["title"]
    return body


# --- Three forms of body, metadata -----------------------------------------------------------


def test_a_raw_body_takes_its_file_name_and_metadata_from_headers(acme_api):
    response = _raw(
        acme_api,
        HTTP_X_ROOTCAUSE_FILENAME="logs/r%C3%A9sum%C3%A9-train.log",
        HTTP_X_ROOTCAUSE_JOB="nightly-finetune",
        HTTP_X_ROOTCAUSE_RUN_URL="https://github.com/acme/train/actions/runs/123",
        HTTP_X_ROOTCAUSE_COMMIT="3f2a9c01b7de",
        HTTP_X_ROOTCAUSE_LABELS="nightly, gpu=a100,,",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["filename"] == "résumé-train.log"
    assert body["job"] == "nightly-finetune"
    assert body["run_url"] == "https://github.com/acme/train/actions/runs/123"
    assert body["commit"] == "3f2a9c01b7de"
    assert body["labels"] == ["nightly", "gpu=a100"]


def test_metadata_keeps_no_control_or_direction_changing_character(acme_api):
    # Percent-decoded headers can carry anything: CR/LF, a right-to-left override, zero widths.
    response = _raw(
        acme_api,
        HTTP_X_ROOTCAUSE_FILENAME="invoice%E2%80%AEtxt.exe",
        HTTP_X_ROOTCAUSE_JOB="night%E2%80%8Bly%07",
        HTTP_X_ROOTCAUSE_COMMIT="3f2a9c0%0D%0AX-Injected%3A%20yes",
        HTTP_X_ROOTCAUSE_LABELS="gpu%E2%81%A6=a100,%E2%80%8B",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    shown = (body["filename"], body["job"], body["commit"], body["labels"])
    assert shown == ("invoicetxt.exe", "nightly", "3f2a9c0 X-Injected: yes", ["gpu=a100"])
    # As stored: the history and the page read the same.
    (row,) = acme_api.get(URL).json()["results"]
    assert (row["filename"], row["job"], row["commit"], row["labels"]) == shown


def test_json_metadata_is_neutralised_too(acme_api):
    response = acme_api.post(
        URL,
        {
            "log": OOM_LOG,
            "filename": "dir/\u2066report\u2069.pdf\u200b.sh",
            "commit": "abc\r\ndef",
            "labels": ["ok\u202d", "\ufeff"],
            "run_url": "https://ci.example/runs/1\u200f",
        },
        format="json",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["filename"], body["commit"], body["labels"]) == (
        "report.pdf.sh",
        "abc def",
        ["ok"],
    )
    assert "\u200f" not in body["run_url"]


def test_a_gzip_body_of_any_raw_type_is_a_log(acme_api):
    response = acme_api.post(URL, data=gzip.compress(LOG), content_type="application/octet-stream")

    assert response.status_code == 202, response.content
    assert response.json()["size_bytes"] == len(LOG)


def test_a_multipart_form_takes_metadata_from_its_fields(acme_api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = acme_api.post(
        URL,
        {
            "file": SimpleUploadedFile("ci/train.log", LOG),
            "job": "smoke",
            "labels": ["a,b", "c"],
            "commit": "abc123",
        },
        format="multipart",
        HTTP_X_ROOTCAUSE_JOB="overridden by the field",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["filename"], body["job"], body["commit"]) == ("train.log", "smoke", "abc123")
    assert body["labels"] == ["a", "b", "c"]


def test_a_json_document_carries_the_log_and_its_metadata(acme_api):
    response = acme_api.post(
        URL,
        {"log": OOM_LOG, "filename": "rank0.log", "job": "eval", "labels": ["x"]},
        format="json",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["filename"], body["job"], body["labels"]) == ("rank0.log", "eval", ["x"])
    assert body["size_bytes"] == len(LOG)


@pytest.mark.parametrize(
    "document",
    [{"filename": "no-log.txt"}, {"log": OOM_LOG, "labels": "not-a-list"}, ["a", "list"]],
)
def test_a_json_document_that_is_not_a_submission_is_refused(acme_api, document):
    response = acme_api.post(URL, document, format="json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert Diagnosis.objects.count() == 0


def test_broken_json_is_a_malformed_request(acme_api):
    response = acme_api.post(URL, data=b'{"log": "x', content_type="application/json")

    _problem(response, 400, "malformed-request", "Malformed request")


def test_the_metadata_is_masked_like_the_log_everywhere_it_shows(acme_api, alice, client):
    response = _raw(
        acme_api,
        HTTP_X_ROOTCAUSE_JOB=JOB,
        HTTP_X_ROOTCAUSE_RUN_URL=RUN_URL,
        HTTP_X_ROOTCAUSE_LABELS="host=10.42.7.19",
    )
    client.force_login(alice)

    stored = Diagnosis.objects.get()
    shown = [
        json.dumps([stored.job, stored.run_url, stored.commit, stored.labels]),
        response.content.decode(),
        acme_api.get(response["Location"]).content.decode(),
        acme_api.get(URL).content.decode(),
        client.get("/diagnoses/").content.decode(),
    ]
    for text in shown:
        for value in ("jane@", "contoso-research.com", "10.42.7.19"):
            assert value not in text
    assert stored.job.startswith("train (")
    assert stored.run_url.endswith("/ml/train/-/jobs/99")
    page = client.get("/diagnoses/").content.decode()
    assert stored.run_url in page.replace("&lt;", "<").replace("&gt;", ">")


def test_the_history_page_links_an_unmasked_run(acme_api, alice, client):
    _raw(
        acme_api, HTTP_X_ROOTCAUSE_JOB="nightly", HTTP_X_ROOTCAUSE_RUN_URL="https://github.com/a/b"
    )
    client.force_login(alice)

    assert (
        '<a href="https://github.com/a/b" rel="nofollow noopener">nightly</a>'
        in client.get("/diagnoses/").content.decode()
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_X_ROOTCAUSE_RUN_URL": "javascript:alert(1)"},
        {"HTTP_X_ROOTCAUSE_JOB": "j" * 201},
        {"HTTP_X_ROOTCAUSE_LABELS": ",".join(str(i) for i in range(21))},
    ],
)
def test_invalid_metadata_is_refused_before_anything_is_charged(acme_api, acme, headers):
    body = _problem(_raw(acme_api, **headers), 400, "invalid-request", "Invalid request")

    assert body["errors"]
    assert Diagnosis.objects.count() == 0
    assert _used(acme) == 0


# --- Idempotency-Key -------------------------------------------------------------------------


def test_a_retry_with_the_same_key_and_log_is_the_same_diagnosis_in_any_form(acme_api, acme):
    first = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-1")
    again = acme_api.post(
        URL, gzip.compress(LOG), content_type="application/gzip", HTTP_IDEMPOTENCY_KEY="job-1"
    )
    as_json = acme_api.post(URL, {"log": OOM_LOG}, format="json", HTTP_IDEMPOTENCY_KEY="job-1")

    assert (first.status_code, again.status_code, as_json.status_code) == (202, 200, 200)
    assert first.json()["id"] == again.json()["id"] == as_json.json()["id"]
    assert _used(acme) == 1


def test_the_same_key_with_another_log_is_422_and_charges_nothing(acme_api, acme):
    first = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-2")
    other = _raw(acme_api, LOG + b"one more line\n", HTTP_IDEMPOTENCY_KEY="job-2")

    _problem(other, 422, "idempotency-key-reused", "Idempotency-Key reused with another log")
    assert "RateLimit-Remaining" in other
    assert Diagnosis.objects.get().id == uuid.UUID(first.json()["id"])
    assert _used(acme) == 1


def test_a_key_is_honoured_for_24_hours_then_makes_a_new_diagnosis(acme_api, acme):
    first = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-3").json()["id"]
    Diagnosis.objects.filter(id=first).update(created_at=timezone.now() - timedelta(hours=23))
    within = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-3")
    Diagnosis.objects.filter(id=first).update(created_at=timezone.now() - timedelta(hours=24))
    after = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-3")
    retry = _raw(acme_api, HTTP_IDEMPOTENCY_KEY="job-3")

    assert (within.status_code, after.status_code, retry.status_code) == (200, 202, 200)
    assert within.json()["id"] == first
    assert after.json()["id"] != first
    assert retry.json()["id"] == after.json()["id"]
    assert _used(acme) == 2
    # The old diagnosis stays in the history; it only let go of the key.
    assert acme_api.get(f"{URL}/{first}").status_code == 200


def test_keys_are_compared_whole_and_scoped_to_the_organisation(acme_api, umbrella_api):
    long = "k" * 255
    a = _raw(acme_api, HTTP_IDEMPOTENCY_KEY=long + "a")
    b = _raw(acme_api, HTTP_IDEMPOTENCY_KEY=long + "b")
    elsewhere = _raw(umbrella_api, HTTP_IDEMPOTENCY_KEY=long + "a")

    assert (a.status_code, b.status_code, elsewhere.status_code) == (202, 202, 202)
    assert len({a.json()["id"], b.json()["id"], elsewhere.json()["id"]}) == 3


def test_no_table_holds_an_idempotency_key(acme_api, api):
    planted = "rc_live_" + uuid.uuid4().hex + "-ci-job-99"
    _raw(acme_api, HTTP_IDEMPOTENCY_KEY=planted)
    _raw(api, HTTP_IDEMPOTENCY_KEY=planted)  # a visitor's too
    _raw(acme_api, HTTP_IDEMPOTENCY_KEY=planted)

    assert Diagnosis.objects.count() == 2
    assert QuotaCharge.objects.exclude(idempotency_key="").count() == 2
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            # The table names come from the database itself.
            query = (
                f"SELECT count(*) FROM {connection.ops.quote_name(table)} t WHERE t::text LIKE %s"  # noqa: S608
            )
            cursor.execute(query, [f"%{planted[8:40]}%"])
            assert cursor.fetchone() == (0,), table


def test_a_visitors_repeated_key_is_409_and_with_another_log_422(api):
    first = _raw(api, HTTP_IDEMPOTENCY_KEY="anon-1")
    same = _raw(api, HTTP_IDEMPOTENCY_KEY="anon-1")
    other = _raw(api, b"other log\n", HTTP_IDEMPOTENCY_KEY="anon-1")

    assert first.status_code == 202
    _problem(same, 409, "idempotency-key-already-used", "Idempotency-Key already used")
    _problem(other, 422, "idempotency-key-reused", "Idempotency-Key reused with another log")


# --- ?wait= -----------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0.0
        self.on_sleep = lambda: None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert 0 < seconds <= selectors.POLL_MAX_SECONDS
        self.now += seconds
        self.slept += seconds
        self.on_sleep()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    # The selectors' own `time`, not the module every other one shares: a module imported
    # during the test with `from time import sleep` would keep the fake for good (Celery's
    # result backend does).
    monkeypatch.setattr(selectors, "time", fake)
    return fake


def test_wait_answers_at_once_for_a_finished_diagnosis(
    acme_api, clock, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        location = _raw(acme_api)["Location"]

    response = acme_api.get(f"{location}?wait=30")

    assert response.json()["status"] == "done"
    assert clock.slept == 0


def test_wait_answers_as_soon_as_the_diagnosis_finishes(
    acme_api, clock, django_capture_on_commit_callbacks
):
    location = _raw(acme_api)["Location"]  # queued: the pipeline was not run
    diagnosis_id = location.rsplit("/", 1)[1]

    def the_worker_finishes() -> None:
        if clock.slept >= 2:
            Diagnosis.objects.filter(id=diagnosis_id).update(status="failed", failure_reason="x")

    clock.on_sleep = the_worker_finishes
    response = acme_api.get(f"{location}?wait=20")

    assert response.json()["status"] == "failed"
    assert 2 <= clock.slept <= 2.5


def test_wait_is_capped_at_30_seconds_and_then_answers_as_is(acme_api, clock):
    location = _raw(acme_api)["Location"]

    response = acme_api.get(f"{location}?wait=3600")

    assert response.status_code == 200
    assert response.json()["status"] == "queued"
    assert clock.slept == pytest.approx(30)
    assert "RateLimit-Remaining" in response


def test_a_bad_wait_is_a_problem(acme_api):
    location = _raw(acme_api)["Location"]

    body = _problem(acme_api.get(f"{location}?wait=-1"), 400, "invalid-request", "Invalid request")
    assert "wait" in body["errors"]


# --- Errors -----------------------------------------------------------------------------------


def test_a_method_not_allowed_is_a_formatted_problem(acme_api):
    response = acme_api.put(URL, data=LOG, content_type="text/plain")

    body = _problem(response, 405, "method-not-allowed", "Method not allowed")
    assert body["detail"] == 'Method "PUT" not allowed.'
    assert "POST" in response["Allow"]
    assert "RateLimit-Remaining" in response


def test_an_unsupported_media_type_is_a_formatted_problem(acme_api):
    response = acme_api.post(URL, data=b"<log/>", content_type="application/xml")

    body = _problem(response, 415, "unsupported-media-type", "Unsupported media type")
    assert body["detail"].startswith('Unsupported media type "application/xml"')


def test_other_apis_unsupported_media_type_is_formatted_too(acme_api):
    response = acme_api.post(
        "/api/v1/encyclopedia/search", data=b"x", content_type="application/xml"
    )

    body = _problem(response, 415, "unsupported-media-type", "Unsupported media type")
    assert body["detail"] == 'Unsupported media type "application/xml" in request.'


@pytest.mark.parametrize(
    "path", [f"{URL}/not-a-uuid", f"{URL}/", "/api/v1/nothing", "/api/v2/diagnoses", "/api"]
)
def test_an_address_under_api_that_matches_nothing_is_a_problem(acme_api, path):
    _problem(acme_api.get(path), 404, "not-found", "Not found")
    _problem(
        acme_api.post(path, data=b"x", content_type="text/plain"), 404, "not-found", "Not found"
    )


def test_an_unknown_diagnosis_is_a_problem(acme_api):
    _problem(acme_api.get(f"{URL}/{uuid.uuid4()}"), 404, "not-found", "Not found")


@override_settings(ROOTCAUSE_MAX_LOG_BYTES=2048)
def test_an_oversized_body_is_413_in_every_form(acme_api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    big = "x" * 3000 + "\n"
    responses = [
        _raw(acme_api, big.encode()),
        acme_api.post(URL, {"log": big}, format="json"),
        acme_api.post(URL, {"file": SimpleUploadedFile("a.log", big.encode())}, format="multipart"),
    ]

    for response in responses:
        _problem(response, 413, "payload-too-large", "Payload too large")
    assert Diagnosis.objects.count() == 0


def test_authentication_and_scope_errors_have_their_types(api, acme, alice):
    from accounts.services import create_api_token

    _, read_only = create_api_token(
        organization=acme, created_by=alice, name="ro", scopes=["diagnoses:read"]
    )

    api.credentials(HTTP_AUTHORIZATION="Bearer rc_wrong")
    _problem(_raw(api), 401, "authentication-failed", "Authentication failed")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {read_only}")
    _problem(_raw(api), 403, "forbidden", "Forbidden")
