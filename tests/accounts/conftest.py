"""Beyond the shared world (alice owns Acme, bob is a member, charlie owns Umbrella): dave is an
admin of Acme, and clients signed in as each of them, for the pages and for the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Membership, Organization
from accounts.services import add_member, mark_email_verified


@pytest.fixture
def dave(db: Any) -> Any:
    return get_user_model().objects.create_user("dave", "dave@acme.example", "pw-dave-123")


@pytest.fixture
def acme_with_admin(acme: Organization, dave: Any) -> Organization:
    add_member(organization=acme, user=dave, role=Membership.Role.ADMIN)
    return acme


@pytest.fixture
def session_api() -> Callable[..., APIClient]:
    """An API client signed in with a session, as the browser's JavaScript would be."""

    def make(user: Any, *, csrf: bool = False) -> APIClient:
        client = APIClient(enforce_csrf_checks=csrf)
        client.force_login(user)
        # The API's bodies are JSON (a form is 415: docs/api.md), as the browser's JavaScript sends.
        client.default_format = "json"
        return client

    return make


@pytest.fixture
def web() -> Callable[[Any], Client]:
    def make(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def verify() -> Callable[[Any], None]:
    def mark(user: Any) -> None:
        mark_email_verified(user=user)

    return mark
