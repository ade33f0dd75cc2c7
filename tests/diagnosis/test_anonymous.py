"""Visitors diagnose without an account: three a day per address, the result by an unguessable
link for ANONYMOUS_RESULT_HOURS (root cause, no fix), then deleted by the periodic purge."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from accounts.actors import anonymous_subject
from billing_tiers.models import QuotaCharge
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG
from workers.tasks import purge_expired_diagnoses

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
ADDRESS = "203.0.113.7"


def _post(client, address: str = ADDRESS, **headers):
    return client.post(
        URL, data=OOM_LOG.encode(), content_type="text/plain", REMOTE_ADDR=address, **headers
    )


def _later(monkeypatch, hours: float) -> None:
    moment = timezone.now() + timedelta(hours=hours)
    monkeypatch.setattr(timezone, "now", lambda: moment)


@pytest.fixture
def posted(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(api)
    assert response.status_code == 202, response.content
    return response


def test_a_visitor_diagnoses_and_reads_the_result_by_its_link(api, posted, settings):
    body = posted.json()
    key = body["access_key"]
    assert posted["Location"] == f"{URL}/{body['id']}?key={key}"
    row = Diagnosis.objects.get(id=body["id"])
    assert row.organization is None
    assert row.created_by is None
    assert row.anonymous_subject == anonymous_subject(ADDRESS)
    # only a digest of the key is stored, and the address not at all
    stored = str(Diagnosis.objects.filter(id=row.id).values().get())
    assert key not in stored
    assert ADDRESS not in stored
    assert row.expires_at is not None
    lifetime = row.expires_at - row.created_at
    assert abs(lifetime - timedelta(hours=settings.ANONYMOUS_RESULT_HOURS)) < timedelta(seconds=5)

    result = api.get(posted["Location"], REMOTE_ADDR="198.51.100.1")  # a link works anywhere

    assert result.status_code == 200
    assert result.json()["status"] == "done"
    assert result.json()["failure"]["slug"] == "optimizer-state-oom"
    assert result.json()["root_cause"]
    assert "remediation" not in result.json()  # fix steps come with an account
    assert "access_key" not in result.json()  # shown once
    assert result.json()["expires_at"] == body["expires_at"]


def test_without_the_key_or_with_a_wrong_one_the_result_is_404(api, posted, acme_api):
    diagnosis_id, key = posted.json()["id"], posted.json()["access_key"]
    other = Diagnosis.objects.create(
        organization=None,
        anonymous_subject="x" * 32,
        access_key_digest="0" * 64,
        expires_at=timezone.now() + timedelta(hours=1),
        source="api",
        size_bytes=1,
    )

    for client, url in (
        (api, f"{URL}/{diagnosis_id}"),
        (api, f"{URL}/{diagnosis_id}?key=wrong"),
        (api, f"{URL}/{diagnosis_id}?key={key[:-1]}"),
        (api, f"{URL}/{other.id}?key={key}"),
        (acme_api, f"{URL}/{diagnosis_id}"),  # in no organisation's history either
    ):
        response = client.get(url, REMOTE_ADDR=ADDRESS)
        assert response.status_code == 404, url
        assert response["Content-Type"] == "application/problem+json"
    assert not acme_api.get(URL).json()["results"]


def test_the_link_expires_and_the_periodic_task_deletes_the_result(api, posted, acme, monkeypatch):
    kept = Diagnosis.objects.create(organization=acme, source="api", size_bytes=1)
    _later(monkeypatch, 23.9)
    assert api.get(posted["Location"]).status_code == 200
    assert purge_expired_diagnoses.delay().get() == 0

    _later(monkeypatch, 24.1)

    assert api.get(posted["Location"]).status_code == 404
    assert purge_expired_diagnoses.delay().get() == 1
    assert list(Diagnosis.objects.values_list("id", flat=True)) == [kept.id]


def test_the_fourth_diagnosis_of_the_day_from_one_address_is_refused(api):
    for _ in range(3):
        assert _post(api).status_code == 202

    refused = _post(api)

    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    assert int(refused["Retry-After"]) > 0
    assert refused["RateLimit-Limit"] == refused["X-RateLimit-Limit"] == "3"
    assert refused["RateLimit-Remaining"] == "0"
    body = refused.json()
    assert body["tier"] == "anonymous"
    assert body["upgrade"]["how"].startswith("Sign up")
    assert Diagnosis.objects.count() == 3
    # IPv6 counts by /64, another address has its own allowance
    assert _post(api, address="2001:db8::1").status_code == 202


def test_a_visitors_repeated_key_is_not_charged_again_and_reveals_no_link(api):
    first = _post(api, HTTP_IDEMPOTENCY_KEY="job-1")
    second = _post(api, HTTP_IDEMPOTENCY_KEY="job-1")
    elsewhere = _post(api, address="198.51.100.9", HTTP_IDEMPOTENCY_KEY="job-1")

    assert first.status_code == 202
    assert second.status_code == 409
    assert second["Content-Type"] == "application/problem+json"
    assert first.json()["access_key"] not in second.content.decode()
    assert first.json()["id"] not in second.content.decode()
    assert elsewhere.status_code == 202  # keys are per visitor
    assert QuotaCharge.objects.count() == 2


def test_a_visitor_has_no_history_and_deletes_nothing(api, posted):
    assert api.get(URL).status_code == 401
    assert api.delete(f"{URL}/{posted.json()['id']}").status_code == 401
    assert Diagnosis.objects.count() == 1


# --- The page ---------------------------------------------------------------------------------


def test_a_visitor_diagnoses_on_the_page_and_sees_the_root_cause_but_no_fix(
    client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": OOM_LOG}, REMOTE_ADDR=ADDRESS)

    assert response.status_code == 302
    location = urlsplit(response["Location"])
    key = parse_qs(location.query)["key"][0]
    page = client.get(response["Location"])
    text = page.content.decode()
    assert page.status_code == 200
    assert "Optimizer State Memory Explosion" in text
    assert "<h3>Evidence</h3>" in text
    assert "<h3>Fix</h3>" not in text
    assert 'id="sign-up"' in text
    assert f'href="/accounts/signup/?next={location.path}"' in text
    assert 'id="link-expiry"' in text
    assert client.get(location.path).status_code == 302  # to sign in
    assert client.get(f"{location.path}?key={key[::-1]}").status_code == 404


def test_over_the_allowance_the_page_says_when_it_resets_and_what_raises_it(client):
    for _ in range(3):
        assert client.post("/", {"log_text": OOM_LOG}, REMOTE_ADDR=ADDRESS).status_code == 302

    response = client.post("/", {"log_text": OOM_LOG}, REMOTE_ADDR=ADDRESS)

    text = response.content.decode()
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "The anonymous tier allows 3 diagnoses a day" in text
    assert "The quota resets at" in text
    assert "Sign up, then verify your e-mail address for 10 a day." in text
    assert "<strong>0 of 3</strong>" in text
    assert Diagnosis.objects.count() == 3
