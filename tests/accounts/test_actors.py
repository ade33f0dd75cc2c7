"""Who is calling: token, session (the chosen organisation) and visitor, resolved once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore
from django.test import RequestFactory
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from accounts.actors import (
    ALL_SCOPES,
    MANAGER_ROLES,
    SCOPE_DIAGNOSES_READ,
    SCOPE_DIAGNOSES_WRITE,
    SESSION_ORGANIZATION,
    actor_of,
    anonymous_subject,
    client_address,
)
from accounts.authentication import ApiTokenAuthentication
from accounts.services import create_api_token, create_organization


def _page_request(user=None, session=None, **meta):
    request = RequestFactory().get("/", **meta)
    request.user = user or AnonymousUser()
    request.session = session if session is not None else SessionStore()
    return request


def test_a_token_acts_for_its_organisation_within_its_scopes(acme, alice):
    _, secret = create_api_token(
        organization=acme, created_by=alice, name="ci", scopes=[SCOPE_DIAGNOSES_WRITE]
    )
    request = Request(
        APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {secret}"),
        authenticators=[ApiTokenAuthentication()],
    )

    actor = actor_of(request)

    assert actor.organization == acme
    assert actor.token is not None
    assert actor.token.name == "ci"
    assert actor.user is None
    assert actor.role is None
    assert actor.has_scope(SCOPE_DIAGNOSES_WRITE)
    assert not actor.has_scope(SCOPE_DIAGNOSES_READ)
    assert not actor.is_anonymous
    assert not actor.is_person
    assert not actor.manages_organization


def test_a_person_acts_for_their_earliest_organisation_until_they_choose(acme, bob, charlie):
    later = create_organization(name="Bob's own", owner=bob)

    assert actor_of(_page_request(bob)).organization == acme

    session = SessionStore()
    session[SESSION_ORGANIZATION] = str(later.pk)
    actor = actor_of(_page_request(bob, session))
    assert actor.organization == later
    assert actor.role == "owner"
    assert actor.manages_organization
    assert actor.scopes == ALL_SCOPES
    assert actor.is_person


@pytest.mark.parametrize("chosen", ["not-a-uuid", "00000000-0000-0000-0000-000000000000", 17])
def test_a_stale_or_foreign_choice_falls_back_to_the_earliest_membership(
    acme, umbrella, bob, chosen
):
    session = SessionStore()
    session[SESSION_ORGANIZATION] = chosen
    assert actor_of(_page_request(bob, session)).organization == acme


def test_a_person_cannot_choose_an_organisation_they_do_not_belong_to(acme, umbrella, bob):
    session = SessionStore()
    session[SESSION_ORGANIZATION] = str(umbrella.pk)
    actor = actor_of(_page_request(bob, session))
    assert actor.organization == acme
    assert actor.role == "member"


def test_a_person_without_organisation_has_none(alice):
    actor = actor_of(_page_request(alice))
    assert actor.organization is None
    assert actor.role is None
    assert actor.user == alice


def test_a_visitor_is_known_by_a_hash_of_the_address_never_the_address(db):
    actor = actor_of(_page_request(REMOTE_ADDR="203.0.113.9"))

    assert actor.is_anonymous
    assert actor.organization is None
    assert actor.anonymous_subject == anonymous_subject("203.0.113.9")
    assert "203.0.113" not in actor.anonymous_subject
    assert len(actor.anonymous_subject) == 32


def test_the_actor_is_resolved_once_per_request(acme, bob, django_assert_num_queries):
    request = _page_request(bob)
    with django_assert_num_queries(1):
        first = actor_of(request)
        second = actor_of(request)
    assert first is second


def test_ipv6_addresses_count_by_their_slash_64_and_mapped_ipv4_as_ipv4(settings):
    same_network = anonymous_subject("2001:db8:1:2::1")
    assert anonymous_subject("2001:db8:1:2:ffff:ffff:ffff:ffff") == same_network
    assert anonymous_subject("2001:db8:1:3::1") != same_network
    assert anonymous_subject("::ffff:198.51.100.7") == anonymous_subject("198.51.100.7")
    assert anonymous_subject("198.51.100.7") != anonymous_subject("198.51.100.8")

    # Keyed by the secret key: no one without it can map hashes back to addresses.
    settings.SECRET_KEY = "another-key"
    assert anonymous_subject("2001:db8:1:2::1") != same_network


def test_no_trusted_proxy_means_the_forwarded_header_is_ignored(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    request = _page_request(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert client_address(request) == "10.0.0.2"


def test_trusted_proxies_are_counted_from_the_right(settings):
    # The client forged the first entry; our two proxies appended what they saw.
    forwarded = "1.2.3.4, 198.51.100.7, 10.0.0.1"
    request = _page_request(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)

    settings.TRUSTED_PROXY_COUNT = 1
    assert client_address(request) == "10.0.0.1"
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_address(request) == "198.51.100.7"


def test_a_short_or_garbled_forwarded_header_falls_back_to_the_peer(settings):
    settings.TRUSTED_PROXY_COUNT = 2
    short = _page_request(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.7")
    garbled = _page_request(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="nonsense, 10.0.0.1")
    assert client_address(short) == "10.0.0.2"
    assert client_address(garbled) == "10.0.0.2"


def test_manager_roles_are_owner_and_admin():
    assert set(MANAGER_ROLES) == {"owner", "admin"}
