"""Recurrence per organisation and failure class: the figures, across organisations and days, in
/api/v1/failures, in a result's API answer and on its page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.models import Diagnosis
from diagnosis.recurrence import recurrence_of, recurrences_for
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

Status = Diagnosis.Status
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _diagnosis(organization, *, days_ago: float, slug: str, status: str = Status.DONE) -> Diagnosis:
    row = Diagnosis.objects.create(
        organization=organization,
        source="api",
        size_bytes=100,
        status=status,
        outcome="diagnosed" if slug else "no_match",
        failure_slug=slug,
    )
    Diagnosis.objects.filter(id=row.id).update(created_at=NOW - timedelta(days=days_ago))
    row.refresh_from_db()
    return row


@pytest.fixture
def seen(acme, umbrella) -> dict[str, Diagnosis]:
    rows = {
        "oom-today": _diagnosis(acme, days_ago=0, slug="optimizer-state-oom"),
        "oom-3d": _diagnosis(acme, days_ago=3, slug="optimizer-state-oom"),
        "oom-10d": _diagnosis(acme, days_ago=10, slug="optimizer-state-oom"),
        "oom-40d": _diagnosis(acme, days_ago=40, slug="optimizer-state-oom"),
        "nccl-8d": _diagnosis(acme, days_ago=8, slug="nccl-timeout"),
    }
    # Not occurrences: failed, unmatched, and another organisation's.
    _diagnosis(acme, days_ago=1, slug="optimizer-state-oom", status=Status.FAILED)
    _diagnosis(acme, days_ago=1, slug="")
    for days in (0, 1, 2, 50):
        _diagnosis(umbrella, days_ago=days, slug="optimizer-state-oom")
    return rows


def test_figures_per_class_count_the_organisations_finished_diagnoses_by_day(acme, seen):
    oom, nccl = recurrences_for(acme.id, now=NOW)

    assert oom.failure_slug == "optimizer-state-oom"
    assert (oom.last_7_days, oom.last_30_days, oom.total) == (2, 3, 4)
    assert oom.first_seen == seen["oom-40d"].created_at
    assert oom.last_seen == seen["oom-today"].created_at
    assert [d.id for d in oom.recent] == [
        seen[k].id for k in ("oom-today", "oom-3d", "oom-10d", "oom-40d")
    ]
    assert (nccl.failure_slug, nccl.last_7_days, nccl.last_30_days) == ("nccl-timeout", 0, 1)


def test_another_organisations_diagnoses_never_count(umbrella, seen):
    (oom,) = recurrences_for(umbrella.id, now=NOW)

    assert (oom.last_7_days, oom.last_30_days, oom.total) == (3, 3, 4)
    assert recurrences_for(None) == []


def test_the_week_moves_with_the_day(acme, seen):
    (oom,) = recurrences_for(
        acme.id, failure_slug="optimizer-state-oom", now=NOW + timedelta(days=5)
    )

    assert (oom.last_7_days, oom.last_30_days) == (1, 3)  # 5, 8 and 15 days before


def test_a_diagnosis_knows_its_class_figures_and_a_visitors_has_none(acme, seen):
    found = recurrence_of(seen["nccl-8d"], now=NOW)

    assert found is not None
    assert found.total == 1
    assert recurrence_of(_diagnosis(acme, days_ago=0, slug="")) is None


def test_the_figures_take_two_queries(acme, seen, django_assert_num_queries):
    with django_assert_num_queries(2):
        recurrences_for(acme.id, now=NOW)


def test_api_lists_the_callers_organisations_classes(acme_api, umbrella_api, seen):
    response = acme_api.get("/api/v1/failures")

    assert response.status_code == 200, response.content
    body = response.json()["results"]
    assert [row["failure_slug"] for row in body] == ["optimizer-state-oom", "nccl-timeout"]
    assert body[0]["total"] == 4
    assert body[0]["recent"][0]["id"] == str(seen["oom-today"].id)
    umbrella = umbrella_api.get("/api/v1/failures").json()["results"]
    assert [(row["failure_slug"], row["total"]) for row in umbrella] == [("optimizer-state-oom", 4)]


def test_api_pages_the_classes(acme_api, seen, django_assert_max_num_queries):
    first = acme_api.get("/api/v1/failures", {"limit": "1"}).json()
    assert first["count"] == 2
    assert [row["failure_slug"] for row in first["results"]] == ["optimizer-state-oom"]
    assert first["results"][0]["recent"][0]["id"] == str(seen["oom-today"].id)
    assert "offset=1" in first["next"]
    second = acme_api.get(first["next"]).json()
    assert [row["failure_slug"] for row in second["results"]] == ["nccl-timeout"]
    assert second["next"] is None
    assert acme_api.get("/api/v1/failures", {"offset": "2"}).json()["results"] == []
    # A page: the count, its classes' figures and their latest diagnoses, whatever the history.
    with django_assert_max_num_queries(8):
        acme_api.get("/api/v1/failures", {"limit": "1"})


def test_api_needs_a_caller_and_the_read_scope(api, acme, alice, seen):
    from accounts.services import create_api_token

    assert api.get("/api/v1/failures").status_code == 401
    _, key = create_api_token(
        organization=acme, created_by=alice, name="write-only", scopes=["diagnoses:write"]
    )
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/failures").status_code == 403


def test_a_results_answer_and_page_say_how_often_the_class_was_seen(
    client, acme_api, alice, seen, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": OOM_LOG})
    diagnosis = Diagnosis.objects.filter(organization__name="Acme").latest("created_at")
    assert diagnosis.failure_slug == "optimizer-state-oom"

    body = acme_api.get(f"/api/v1/diagnoses/{diagnosis.id}").json()

    assert body["recurrence"]["failure_slug"] == "optimizer-state-oom"
    assert body["recurrence"]["total"] == 5
    assert body["recurrence"]["last_7_days"] == 1
    text = client.get(response["Location"]).content.decode()
    assert 'id="recurrence"' in text
    assert "Seen 1 time this week" in text
    assert f'href="/diagnoses/{seen["oom-today"].id}/"' in text


def test_a_visitors_result_has_no_recurrence(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/diagnoses", OOM_LOG, content_type="text/plain")
    assert created.status_code == 202, created.content

    body = api.get(created["Location"]).json()

    assert body["status"] == "done"
    assert "recurrence" not in body


def test_recurrence_comes_with_the_history_as_the_api_docs_say(acme_api, acme, seen):
    """A free organisation keeps a history, so it has its recurrence (docs/api.md, tiers.md);
    only alerts and follow-up questions are Scale's."""
    from pathlib import Path

    from billing_tiers.selectors import entitlements_for_organization

    entitlements = entitlements_for_organization(acme)
    assert entitlements.tier == "free"
    assert entitlements.history_days is not None
    assert entitlements.history_days > 0
    assert acme_api.get("/api/v1/failures").status_code == 200
    docs = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    scale = docs.split("## Scale", 1)[1].split("\n## ", 1)[0]
    assert "/api/v1/failures" not in scale
    assert "every tier that keeps one has it" in docs
