"""Loading the catalogue into the database, editing entries, and the catalogue version."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.core.management import call_command

from encyclopedia import selectors, services
from encyclopedia.models import CatalogueVersion, Entry
from plumbing.problems import ApplicationError
from rootcause import catalogue as catalogue_files
from tests.catalogue import make_entry
from tests.encyclopedia.test_catalogue_files import TAXONOMY_SLUGS


def test_load_creates_entries_and_records_the_version(small_catalogue: list[dict[str, Any]]):
    version, entries = selectors.current_catalogue()
    assert entries == sorted(small_catalogue, key=lambda e: e["slug"])
    assert version == catalogue_files.catalogue_version(entries)
    oom = Entry.objects.get(slug="test-oom")
    assert (oom.title, oom.category, oom.severity, oom.tags) == (
        "Test entry test-oom",
        "memory",
        "high",
        ["cuda-oom", "adam"],
    )


def test_current_catalogue_takes_two_queries(
    small_catalogue: list[dict[str, Any]], django_assert_num_queries: Any
):
    with django_assert_num_queries(2):
        version, entries = selectors.current_catalogue()
    assert len(entries) == 3
    assert version == catalogue_files.catalogue_version(entries)


def test_second_load_changes_nothing(small_catalogue: list[dict[str, Any]]):
    before = list(Entry.objects.values_list("slug", "updated_at"))
    report = services.load_catalogue(entries=copy.deepcopy(small_catalogue))
    assert not report.changed
    assert report.unchanged == 3
    assert list(Entry.objects.values_list("slug", "updated_at")) == before
    assert CatalogueVersion.objects.count() == 1


def test_fingerprint_edit_in_the_files_bumps_the_version(small_catalogue: list[dict[str, Any]]):
    old = selectors.current_version()
    edited = copy.deepcopy(small_catalogue)
    edited[1]["fingerprints"]["signals"][0]["weight"] = 0.5
    report = services.load_catalogue(entries=edited)
    assert report.updated == ["test-nccl"]
    assert report.version_changed
    assert selectors.current_version() == report.version != old
    assert CatalogueVersion.objects.count() == 2


def test_prose_edit_updates_the_entry_but_keeps_the_version(small_catalogue: list[dict[str, Any]]):
    old = selectors.current_version()
    edited = copy.deepcopy(small_catalogue)
    edited[0]["title"] = "A better title"
    report = services.load_catalogue(entries=edited)
    assert report.updated == ["test-oom"]
    assert not report.version_changed
    assert Entry.objects.get(slug="test-oom").title == "A better title"
    assert selectors.current_version() == old


def test_entries_gone_from_the_files_are_removed(small_catalogue: list[dict[str, Any]]):
    report = services.load_catalogue(entries=[small_catalogue[1], small_catalogue[2]])
    assert report.deleted == ["test-oom"]
    assert report.version_changed
    assert sorted(Entry.objects.values_list("slug", flat=True)) == ["test-disk", "test-nccl"]


def test_load_refuses_an_invalid_entry(db: Any) -> None:
    bad = make_entry("test-bad", severity="catastrophic")
    with pytest.raises(catalogue_files.CatalogueError, match="severity"):
        services.load_catalogue(entries=[bad])
    assert not Entry.objects.exists()


def test_update_entry_bumps_the_version_only_for_fingerprints_fix_verification(
    small_catalogue: list[dict[str, Any]],
):
    entry = Entry.objects.get(slug="test-oom")
    data = copy.deepcopy(entry.data)
    data["mechanism"] += " Edited."
    services.update_entry(entry=entry, data=data)
    assert CatalogueVersion.objects.count() == 1

    data = copy.deepcopy(entry.data)
    data["fix"]["command"] = "a new command"
    services.update_entry(entry=entry, data=data)
    assert CatalogueVersion.objects.count() == 2
    version, entries = selectors.current_catalogue()
    assert version == catalogue_files.catalogue_version(entries)
    assert Entry.objects.get(slug="test-oom").data["fix"]["command"] == "a new command"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"slug": "renamed"}, "slug cannot change"),
        ({"related": ["does-not-exist"]}, "related names unknown"),
        ({"severity": "urgent"}, "severity"),
    ],
)
def test_update_entry_validates(
    small_catalogue: list[dict[str, Any]], change: dict[str, Any], message: str
):
    entry = Entry.objects.get(slug="test-oom")
    with pytest.raises(ApplicationError, match=message):
        services.update_entry(entry=entry, data={**entry.data, **change})
    assert Entry.objects.get(slug="test-oom").data == small_catalogue[0]


def test_admin_change_bumps_the_version(
    small_catalogue: list[dict[str, Any]], client, django_user_model
):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    entry = Entry.objects.get(slug="test-nccl")
    assert client.get("/admin/encyclopedia/entry/").status_code == 200
    assert client.get(f"/admin/encyclopedia/entry/{entry.pk}/change/").status_code == 200
    data = copy.deepcopy(entry.data)
    data["fingerprints"]["signals"][0]["pattern"] = "NCCL watchdog timeout"
    old = selectors.current_version()

    response = client.post(
        f"/admin/encyclopedia/entry/{entry.pk}/change/", {"data": json.dumps(data)}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    entry.refresh_from_db()
    assert entry.data["fingerprints"]["signals"][0]["pattern"] == "NCCL watchdog timeout"
    assert selectors.current_version() != old


def test_admin_shows_validation_errors(
    small_catalogue: list[dict[str, Any]], client, django_user_model
):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    entry = Entry.objects.get(slug="test-nccl")
    data = {**entry.data, "severity": "urgent"}
    response = client.post(
        f"/admin/encyclopedia/entry/{entry.pk}/change/", {"data": json.dumps(data)}
    )
    assert response.status_code == 200
    assert "severity" in response.content.decode()
    assert Entry.objects.get(slug="test-nccl").severity == "medium"
    assert CatalogueVersion.objects.count() == 1


def test_management_command_loads_every_taxonomy_slug_idempotently(db: Any, capsys) -> None:
    call_command("load_catalogue")
    first = capsys.readouterr().out
    assert "(new version)" in first
    slugs = set(Entry.objects.values_list("slug", flat=True))
    assert set(TAXONOMY_SLUGS) <= slugs
    version = selectors.current_version()
    assert version == catalogue_files.catalogue_version(catalogue_files.load_entries())

    call_command("load_catalogue")
    second = capsys.readouterr().out
    assert "0 created, 0 updated, 0 deleted" in second
    assert "(new version)" not in second
    assert selectors.current_version() == version
    assert CatalogueVersion.objects.count() == 1
