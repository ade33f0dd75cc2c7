"""One gate on fix steps, one input: the caller's tier (billing_tiers.entitlements_for), the same
that decides whether a diagnosis carries its fix."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from billing_tiers import entitlements
from encyclopedia import selectors

GATED = ("FIX-STEP-test-oom", "fixcmd-test-oom", "verifycmd-test-oom", "CODE-test-oom")


@pytest.fixture
def fix_steps(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make every tier include fix steps, or none: whatever the tier says, the gate follows."""

    def set_to(value: bool) -> None:
        real = entitlements.entitlements_for

        def patched(actor: Actor) -> entitlements.Entitlements:
            return dataclasses.replace(real(actor), fix_steps=value)

        monkeypatch.setattr(selectors, "entitlements_for", patched)

    return set_to


def test_visitors_are_gated_people_and_tokens_are_not(
    client: Any, small_catalogue: Any, bob: Any, acme_api: APIClient, api: APIClient
) -> None:
    assert "FIX-STEP-test-oom" not in client.get("/encyclopedia/test-oom/").content.decode()
    assert "fix" not in api.get("/api/v1/encyclopedia/test-oom/").json()
    assert "fix" in acme_api.get("/api/v1/encyclopedia/test-oom/").json()
    client.force_login(bob)
    assert "FIX-STEP-test-oom" in client.get("/encyclopedia/test-oom/").content.decode()


def test_a_signed_in_person_whose_tier_has_no_fixes_does_not_see_them(
    client: Any, small_catalogue: Any, bob: Any, acme: Any, fix_steps: Any
) -> None:
    fix_steps(False)
    client.force_login(bob)

    html = client.get("/encyclopedia/test-oom/").content.decode()
    item = client.get("/api/v1/encyclopedia/test-oom/").json()

    for gated in GATED:
        assert gated not in html
    assert "fix" not in item
    assert "fix" in item["locked"]


def test_a_visitor_whose_tier_had_fixes_would_see_them(
    client: Any, small_catalogue: Any, fix_steps: Any
) -> None:
    fix_steps(True)

    html = client.get("/encyclopedia/test-oom/").content.decode()
    listing = client.get("/api/v1/encyclopedia/").json()["results"]

    for gated in GATED:
        assert gated in html
    assert all(item["locked"] == [] for item in listing)
