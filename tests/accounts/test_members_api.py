"""/api/v1/organization/members and /ownership: roles enforced, 404 across organisations."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection

from accounts import services
from accounts.actors import Actor
from accounts.models import ApiToken, Membership
from accounts.services import add_member, create_api_token, create_organization
from plumbing.problems import Conflict

MEMBERS = "/api/v1/organization/members"


def _member_id(organization, user) -> str:
    return str(Membership.objects.get(organization=organization, user=user).public_id)


def test_every_member_reads_the_member_list_with_a_pinned_query_count(
    acme_with_admin, bob, session_api, django_assert_num_queries
):
    client = session_api(bob)
    client.get(MEMBERS)  # warm the session

    # session, user, actor's membership, count, page
    with django_assert_num_queries(5):
        response = client.get(MEMBERS)

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [(m["email"], m["role"]) for m in body["results"]] == [
        ("alice@acme.example", "owner"),
        ("bob@acme.example", "member"),
        ("dave@acme.example", "admin"),
    ]
    assert set(body["results"][0]) == {"id", "email", "role", "joined_at"}


def test_a_token_cannot_read_or_manage_members(acme, acme_api):
    assert acme_api.get(MEMBERS).status_code == 403
    assert acme_api.post(MEMBERS, {"email": "x@acme.example"}, format="json").status_code == 403


def test_anonymous_callers_get_401(api, db):
    response = api.get(MEMBERS)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"


def test_another_organisations_member_is_404_for_every_verb(acme, umbrella, charlie, session_api):
    client = session_api(charlie)  # charlie owns Umbrella
    alice_in_acme = f"{MEMBERS}/{_member_id(acme, acme.memberships.get(role='owner').user)}"

    assert client.get(alice_in_acme).status_code == 404
    assert client.patch(alice_in_acme, {"role": "member"}).status_code == 404
    deleted = client.delete(alice_in_acme)
    assert deleted.status_code == 404
    assert deleted["Content-Type"] == "application/problem+json"
    assert client.delete(f"{MEMBERS}/not-a-uuid").status_code == 404
    assert Membership.objects.filter(organization=acme).count() == 2


def test_owners_change_roles_and_others_may_not(acme_with_admin, alice, bob, dave, session_api):
    bob_url = f"{MEMBERS}/{_member_id(acme_with_admin, bob)}"

    assert session_api(bob).patch(bob_url, {"role": "admin"}).status_code == 403
    refused = session_api(dave).patch(bob_url, {"role": "admin"})
    assert refused.status_code == 403
    assert refused.json()["title"] == "Forbidden"

    response = session_api(alice).patch(bob_url, {"role": "admin"})
    assert response.status_code == 200
    assert response.json()["role"] == "admin"
    assert session_api(alice).patch(bob_url, {"role": "king"}).status_code == 400


def test_the_last_owner_cannot_step_down_or_leave(acme, alice, session_api):
    client = session_api(alice)
    own = f"{MEMBERS}/{_member_id(acme, alice)}"

    demoted = client.patch(own, {"role": "admin"})
    assert demoted.status_code == 409
    assert "needs an owner" in demoted.json()["detail"]
    assert client.delete(own).status_code == 409
    assert Membership.objects.get(organization=acme, user=alice).role == "owner"


def test_a_second_owner_lets_the_first_leave(acme, alice, bob, session_api):
    Membership.objects.filter(user=bob).update(role="owner")
    assert session_api(alice).delete(f"{MEMBERS}/{_member_id(acme, alice)}").status_code == 204
    assert not Membership.objects.filter(organization=acme, user=alice).exists()


def test_owners_remove_members_and_their_tokens_are_revoked(acme, alice, bob, session_api):
    Membership.objects.filter(user=bob).update(role="admin")
    create_api_token(organization=acme, created_by=bob, name="bob's ci")
    _, _alices = create_api_token(organization=acme, created_by=alice, name="alice's ci")
    elsewhere = create_organization(name="Bob's own", owner=bob)
    create_api_token(organization=elsewhere, created_by=bob, name="bob's own ci")

    response = session_api(alice).delete(f"{MEMBERS}/{_member_id(acme, bob)}")

    assert response.status_code == 204
    assert not Membership.objects.filter(organization=acme, user=bob).exists()
    assert ApiToken.objects.get(name="bob's ci").revoked_at is not None
    assert ApiToken.objects.get(name="alice's ci").revoked_at is None
    assert ApiToken.objects.get(name="bob's own ci").revoked_at is None


def test_members_and_admins_cannot_remove_others_but_may_leave(
    acme_with_admin, alice, bob, dave, session_api
):
    alice_url = f"{MEMBERS}/{_member_id(acme_with_admin, alice)}"
    assert session_api(bob).delete(alice_url).status_code == 403
    assert (
        session_api(dave).delete(f"{MEMBERS}/{_member_id(acme_with_admin, bob)}").status_code == 403
    )

    assert (
        session_api(bob).delete(f"{MEMBERS}/{_member_id(acme_with_admin, bob)}").status_code == 204
    )
    assert not Membership.objects.filter(organization=acme_with_admin, user=bob).exists()


def test_ownership_is_transferred_in_one_step(acme, alice, bob, session_api):
    response = session_api(alice).post(
        "/api/v1/organization/ownership", {"member_id": _member_id(acme, bob)}
    )

    assert response.status_code == 200
    roles = dict(Membership.objects.filter(organization=acme).values_list("user__username", "role"))
    assert roles == {"alice": "admin", "bob": "owner"}


def test_ownership_transfer_needs_an_owner_and_a_member_of_this_organisation(
    acme, umbrella, alice, bob, charlie, session_api
):
    url = "/api/v1/organization/ownership"
    assert session_api(bob).post(url, {"member_id": _member_id(acme, bob)}).status_code == 403
    foreign = session_api(alice).post(url, {"member_id": _member_id(umbrella, charlie)})
    assert foreign.status_code == 404
    own = session_api(alice).post(url, {"member_id": _member_id(acme, alice)})
    assert own.status_code == 400


def test_a_person_with_no_organisation_is_told_so(session_api, db):
    loner = User.objects.create_user("loner", "loner@example.org", "pw-loner-123")
    response = session_api(loner).get(MEMBERS)
    assert response.status_code == 403
    assert "not a member of any organisation" in response.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_two_owners_leaving_at_once_leave_one_owner():
    """Owner changes lock the organisation: of two simultaneous departures one is refused."""
    alice = User.objects.create_user("alice2", "alice2@acme.example")
    bob = User.objects.create_user("bob2", "bob2@acme.example")
    acme = create_organization(name="Acme", owner=alice)
    add_member(organization=acme, user=bob, role="owner")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def leave(user) -> None:
        actor = Actor(organization=acme, user=user, role="owner")
        barrier.wait()
        try:
            services.leave_organization(actor=actor)
            outcomes.append("left")
        except Conflict:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=leave, args=(user,)) for user in (alice, bob)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["left", "refused"]
    assert Membership.objects.filter(organization=acme, role="owner").count() == 1
