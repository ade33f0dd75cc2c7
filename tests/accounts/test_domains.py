"""Workplace verification: claimed domains, verified by a manager's verified address there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.domains import InvalidDomain, is_public_email_domain, normalize_domain
from accounts.models import Domain, Membership
from accounts.selectors import managers_of, workplace_domain
from accounts.services import mark_email_verified

DOMAINS = "/api/v1/organization/domains"


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("acme.com", "acme.com"),
        ("  @Acme.COM. ", "acme.com"),
        ("someone@eng.acme.co.uk", "eng.acme.co.uk"),
        ("bücher.example", "xn--bcher-kva.example"),
    ],
)
def test_domains_are_normalised(raw, normal):
    assert normalize_domain(raw) == normal


@pytest.mark.parametrize(
    "raw", ["", "localhost", "acme", "-acme.com", "acme..com", "acme.c0m", "a b.com"]
)
def test_malformed_domains_are_refused(raw):
    with pytest.raises(InvalidDomain):
        normalize_domain(raw)


@pytest.mark.parametrize(
    "domain",
    [
        "gmail.com",
        "googlemail.com",
        "outlook.com",
        "hotmail.co.uk",
        "live.com",
        "yahoo.co.jp",
        "icloud.com",
        "proton.me",
        "protonmail.com",
        "qq.com",
        "163.com",
        "gmx.de",
        "gmx.net",
        "mail.ru",
        "yandex.ru",
        "yandex.com.tr",
        "aol.com",
        "mail.gmail.com",
    ],
)
def test_public_mail_providers_are_recognised(domain):
    assert is_public_email_domain(domain)


@pytest.mark.parametrize(
    "domain", ["acme.com", "live.acme.com", "yahoo-research.example", "gmx.acme.de", "proton.ai"]
)
def test_workplaces_are_not_taken_for_providers(domain):
    assert not is_public_email_domain(domain)


def test_an_admin_claims_a_domain_and_it_is_verified_by_their_verified_address(
    acme_with_admin, dave, session_api
):
    client = session_api(dave)
    created = client.post(DOMAINS, {"domain": "ACME.example"})

    assert created.status_code == 201
    assert created.json()["domain"] == "acme.example"
    assert created.json()["verified"] is False
    assert workplace_domain(acme_with_admin) is None

    mark_email_verified(user=dave)

    (row,) = client.get(DOMAINS).json()["results"]
    assert row["verified"] is True
    assert workplace_domain(acme_with_admin) == "acme.example"


def test_a_verified_plain_member_does_not_verify_the_domain(acme, alice, bob, session_api):
    session_api(alice).post(DOMAINS, {"domain": "acme.example"})
    mark_email_verified(user=bob)
    assert workplace_domain(acme) is None

    Membership.objects.filter(user=bob).update(role="admin")
    assert workplace_domain(acme) == "acme.example"


def test_a_changed_address_no_longer_verifies(acme, alice, session_api):
    session_api(alice).post(DOMAINS, {"domain": "acme.example"})
    mark_email_verified(user=alice)
    assert workplace_domain(acme) == "acme.example"

    User.objects.filter(pk=alice.pk).update(email="alice@elsewhere.example")
    assert workplace_domain(acme) is None


def test_a_domain_later_listed_as_public_is_not_a_workplace(acme, alice, monkeypatch):
    Domain.objects.create(organization=acme, domain="acme.example", created_by=alice)
    mark_email_verified(user=alice)
    monkeypatch.setattr("accounts.selectors.is_public_email_domain", lambda domain: True)
    assert workplace_domain(acme) is None


@pytest.mark.parametrize("domain", ["gmail.com", "gmx.de", "mail.yandex.ru", "not a domain"])
def test_public_providers_and_garbage_cannot_be_claimed(acme, alice, session_api, domain):
    response = session_api(alice).post(DOMAINS, {"domain": domain})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert not Domain.objects.exists()


def test_claiming_twice_is_a_conflict_but_two_organisations_may_claim_one_domain(
    acme, umbrella, alice, charlie, session_api
):
    assert session_api(alice).post(DOMAINS, {"domain": "shared.example"}).status_code == 201
    assert session_api(alice).post(DOMAINS, {"domain": "Shared.example"}).status_code == 409
    assert session_api(charlie).post(DOMAINS, {"domain": "shared.example"}).status_code == 201


def test_members_and_tokens_cannot_claim_or_list(acme, bob, acme_api, session_api):
    for client in (session_api(bob), acme_api):
        assert client.get(DOMAINS).status_code == 403
        assert client.post(DOMAINS, {"domain": "acme.example"}, format="json").status_code == 403


def test_remove_with_404_across_organisations_and_403_for_members(
    acme, umbrella, alice, bob, charlie, session_api, django_assert_num_queries
):
    domain_id = session_api(alice).post(DOMAINS, {"domain": "acme.example"}).json()["id"]
    client = session_api(alice)
    client.get(DOMAINS)

    # session, user, membership, verified manager domains, count, page
    with django_assert_num_queries(6):
        assert client.get(DOMAINS).json()["count"] == 1

    assert session_api(charlie).delete(f"{DOMAINS}/{domain_id}").status_code == 404
    assert session_api(bob).delete(f"{DOMAINS}/{domain_id}").status_code == 403
    assert client.delete(f"{DOMAINS}/{domain_id}").status_code == 204
    assert not Domain.objects.exists()


def test_managers_of_are_the_active_owners_and_admins(acme_with_admin, alice, bob, dave):
    assert set(managers_of(acme_with_admin)) == {alice, dave}
    User.objects.filter(pk=dave.pk).update(is_active=False)
    assert list(managers_of(acme_with_admin)) == [alice]
