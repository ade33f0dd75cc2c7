"""The organisation's history, in the API and on the page: filters, cursor pages, what each row
shows, pinned query counts, and retention by tier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.services import mark_email_verified
from diagnosis import services
from diagnosis.models import Diagnosis

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
Status = Diagnosis.Status


def _diagnosis(organization, *, when: datetime, slug: str = "", status: str = Status.DONE):
    row = Diagnosis.objects.create(
        organization=organization,
        source="api",
        size_bytes=2048,
        filename="run.log",
        status=status,
        outcome="diagnosed" if slug else "no_match",
        failure_slug=slug,
    )
    Diagnosis.objects.filter(id=row.id).update(created_at=when)
    return str(row.id)


@pytest.fixture
def history(acme, umbrella) -> dict[str, str]:
    """Five diagnoses of Acme a day apart, the newest first in this dict; one of Umbrella."""
    day = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    rows = {
        "nccl-today": _diagnosis(acme, when=day, slug="nccl-timeout"),
        "oom-failed": _diagnosis(
            acme, when=day - timedelta(days=1), slug="optimizer-state-oom", status=Status.FAILED
        ),
        "oom-2": _diagnosis(acme, when=day - timedelta(days=2), slug="optimizer-state-oom"),
        "no-match": _diagnosis(acme, when=day - timedelta(days=3)),
        "oom-4": _diagnosis(acme, when=day - timedelta(days=4), slug="optimizer-state-oom"),
    }
    _diagnosis(umbrella, when=day, slug="optimizer-state-oom")
    return rows


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_the_list_is_the_organisations_newest_first_with_each_rows_metadata(acme_api, history):
    response = acme_api.get(URL)

    assert _ids(response) == list(history.values())
    row = response.json()["results"][0]
    assert row == {
        "id": history["nccl-today"],
        "status": "done",
        "outcome": "diagnosed",
        "failure_slug": "nccl-timeout",
        "kind": "log",
        "filename": "run.log",
        "size_bytes": 2048,
        "job": "",
        "run_url": "",
        "commit": "",
        "labels": [],
        "source": "api",
        "created_at": "2026-11-20T12:00:00Z",
        "finished_at": None,
    }


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ({"failure": "optimizer-state-oom"}, ["oom-failed", "oom-2", "oom-4"]),
        ({"status": "failed"}, ["oom-failed"]),
        ({"failure": "optimizer-state-oom", "status": "done"}, ["oom-2", "oom-4"]),
        ({"created_after": "2026-11-18"}, ["nccl-today", "oom-failed", "oom-2"]),
        ({"created_before": "2026-11-18"}, ["no-match", "oom-4"]),
        (
            {"created_after": "2026-11-17T12:00:00Z", "created_before": "2026-11-19T12:00:00Z"},
            ["oom-2", "no-match"],
        ),
    ],
)
def test_the_list_filters(acme_api, history, query, names):
    assert _ids(acme_api.get(URL, query)) == [history[name] for name in names]


def test_a_bad_filter_is_a_problem(acme_api, history):
    response = acme_api.get(URL, {"status": "exploded", "created_after": "yesterday"})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert set(response.json()["errors"]) == {"status", "created_after"}


def test_the_list_pages_by_cursor_both_ways_and_keeps_its_filters(acme_api, history):
    first = acme_api.get(URL, {"page_size": 2, "failure": "optimizer-state-oom"}).json()
    assert first["previous"] is None
    second = acme_api.get(first["next"]).json()
    assert "failure=optimizer-state-oom" in first["next"]
    assert second["next"] is None

    seen = [row["id"] for row in first["results"] + second["results"]]
    assert seen == [history["oom-failed"], history["oom-2"], history["oom-4"]]
    back = acme_api.get(second["previous"]).json()
    assert [row["id"] for row in back["results"]] == seen[:2]


def test_a_tampered_cursor_is_400(acme_api, history):
    # A bad parameter, not a missing page (plumbing/pagination.py).
    response = acme_api.get(URL, {"cursor": "bz1hYmM="})
    assert response.status_code == 400
    assert "cursor" in response.json()["errors"]


def test_the_list_query_count_does_not_grow_with_the_history(
    acme_api, acme, history, django_assert_num_queries
):
    acme_api.get(URL)  # the token's last use is written at most once a minute: not in the count

    # the token, the page, and the quota headers: the tier (claimed domains and the managers'
    # verified addresses, one statement) and today's usage
    with django_assert_num_queries(4):
        assert len(_ids(acme_api.get(URL))) == 5
    for day in range(30):
        _diagnosis(acme, when=datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=day))
    with django_assert_num_queries(4):
        assert len(_ids(acme_api.get(URL))) == 35


# --- The page ---------------------------------------------------------------------------------


def test_the_page_shows_each_rows_metadata_and_filters_like_the_api(client, alice, history):
    client.force_login(alice)

    page = client.get("/diagnoses/", {"failure": "optimizer-state-oom", "status": "done"})

    text = page.content.decode()
    assert page.status_code == 200
    for name in ("oom-2", "oom-4"):
        assert f'href="/diagnoses/{history[name]}/"' in text
    for name in ("nccl-today", "oom-failed", "no-match"):
        assert history[name] not in text
    assert "run.log" in text
    assert "2.0\xa0KB" in text
    assert '<a href="/encyclopedia/optimizer-state-oom/">optimizer-state-oom</a>' in text


def test_the_page_has_older_and_newer_links_instead_of_stopping(client, alice, acme, monkeypatch):
    from diagnosis.pagination import HistoryPagination

    monkeypatch.setattr(HistoryPagination, "page_size", 2)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    ids = [_diagnosis(acme, when=start - timedelta(hours=hour)) for hour in range(5)]
    client.force_login(alice)

    seen, page = [], client.get("/diagnoses/", {"status": "done"})
    while True:
        text = page.content.decode()
        seen += [i for i in ids if i in text]
        if 'rel="next"' not in text:
            break
        older = text.split('" rel="next"')[0].rsplit('href="', 1)[1].replace("&amp;", "&")
        assert older.startswith("/diagnoses/?")
        assert "status=done" in older
        page = client.get(older)
    assert seen == ids
    assert 'rel="prev"' in text


def test_the_page_query_count_does_not_grow_with_the_history(
    client, alice, acme, history, django_assert_num_queries
):
    client.force_login(alice)

    # the session, the person, their membership (organisation and role, for the delete buttons),
    # the catalogue for the failure filter, the page, the switcher's memberships, and the failure
    # classes' recurrence (the figures, the latest of each class)
    with django_assert_num_queries(8):
        assert client.get("/diagnoses/").status_code == 200
    for day in range(30):
        _diagnosis(
            acme,
            when=datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=day),
            slug=("nccl-timeout", "optimizer-state-oom", "")[day % 3],
        )
    with django_assert_num_queries(8):
        assert client.get("/diagnoses/").status_code == 200


# --- Retention --------------------------------------------------------------------------------


def test_the_purge_keeps_each_organisations_history_for_its_tiers_days(
    acme, umbrella, charlie, settings
):
    mark_email_verified(user=charlie)  # Umbrella is verified (90 days), Acme free (30 days)
    now = timezone.now()
    acme_recent = _diagnosis(acme, when=now - timedelta(days=29))
    _diagnosis(acme, when=now - timedelta(days=31))
    umbrella_recent = _diagnosis(umbrella, when=now - timedelta(days=31))
    _diagnosis(umbrella, when=now - timedelta(days=91))

    assert services.purge_expired_diagnoses() == 2

    assert {str(i) for i in Diagnosis.objects.values_list("id", flat=True)} == {
        acme_recent,
        umbrella_recent,
    }
    assert services.purge_expired_diagnoses() == 0


@pytest.mark.parametrize(
    "query",
    [
        {"cursor": "xyz"},  # not base64
        {"cursor": "bz1hYmM="},  # base64 of a position that is no date
        {"cursor": "xyz", "status": "done"},
        {"page_size": "abc"},
    ],
)
def test_a_bad_cursor_or_page_size_on_the_page_is_a_400_with_the_newest_page(
    client, alice, history, query
):
    client.force_login(alice)

    page = client.get("/diagnoses/", query)

    assert page.status_code == 400  # as the API answers the same query
    text = page.content.decode()
    assert "That link to a page of the history is not valid" in text
    assert history["oom-2"] in text  # the newest page, filters kept
    if "status" in query:
        assert history["oom-failed"] not in text
    api = client.get("/api/v1/diagnoses", query)
    assert api.status_code == 400
