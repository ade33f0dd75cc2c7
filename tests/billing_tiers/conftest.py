"""Tiers need facts about people: verified addresses, claimed domains, codes. Built through the
services of accounts and billing_tiers, on top of the small world of tests/conftest.py."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.actors import Actor, actor_for_person, anonymous_subject
from accounts.models import Organization
from accounts.services import claim_domain, create_api_token, mark_email_verified
from billing_tiers.services import issue_evaluation_codes


@pytest.fixture(autouse=True)
def _own_cache_namespace(settings: Any) -> None:
    """Each test its own throttle counters, under this run's Redis prefix."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = (
        f"{caches['default'].get('KEY_PREFIX', '')}-{uuid.uuid4().hex[:8]}"
    )
    settings.CACHES = caches


def person(user: Any, organization: Organization) -> Actor:
    return actor_for_person(user, organization.pk)


def visitor(address: str = "127.0.0.1") -> Actor:
    return Actor(organization=None, anonymous_subject=anonymous_subject(address))


def make_workplace(organization: Organization, manager: Any, domain: str) -> Organization:
    mark_email_verified(user=manager)
    claim_domain(actor=person(manager, organization), domain=domain)
    return organization


@pytest.fixture
def acme_workplace(acme: Organization, alice: Any) -> Organization:
    return make_workplace(acme, alice, "acme.example")


@pytest.fixture
def umbrella_workplace(umbrella: Organization, charlie: Any) -> Organization:
    return make_workplace(umbrella, charlie, "umbrella.example")


def logged_in(user: Any) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def alice_api(alice: Any, acme: Organization) -> APIClient:
    return logged_in(alice)


@pytest.fixture
def bob_api(bob: Any, acme: Organization) -> APIClient:
    return logged_in(bob)


@pytest.fixture
def charlie_api(charlie: Any, umbrella: Organization) -> APIClient:
    return logged_in(charlie)


@pytest.fixture
def read_only_api(acme: Organization, alice: Any) -> APIClient:
    _, secret = create_api_token(
        organization=acme, created_by=alice, name="ro", scopes=["diagnoses:read"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def issue_code(db: Any) -> Callable[..., str]:
    def issue(**options: Any) -> str:
        return issue_evaluation_codes(count=1, **options)[0].code

    return issue


class Clock:
    """Moves `timezone.now()` (and so auto_now fields) to a chosen instant."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch

    def set(self, moment: datetime) -> datetime:
        self._monkeypatch.setattr(timezone, "now", lambda: moment)
        return moment


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)
