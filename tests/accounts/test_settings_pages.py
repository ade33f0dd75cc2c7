"""/settings/ and the organisation switcher, for owners, admins and members."""

from __future__ import annotations

from django.contrib.messages import get_messages

from accounts.actors import SESSION_ORGANIZATION, actor_of
from accounts.models import ApiToken, Domain, Invitation, Membership
from accounts.services import create_organization


def test_an_owner_sees_every_section(acme, alice, web):
    html = web(alice).get("/settings/").content.decode()

    for section in (
        'id="account"',
        'id="organization"',
        'id="members"',
        'id="invitations"',
        'id="domains"',
        'id="tokens"',
    ):
        assert section in html
    assert "bob@acme.example" in html
    assert "not verified" in html  # alice has not followed her link


def test_a_member_sees_the_members_but_manages_nothing(acme, bob, web):
    client = web(bob)
    html = client.get("/settings/").content.decode()

    assert "alice@acme.example" in html
    for section in ('id="invitations"', 'id="domains"', 'id="tokens"'):
        assert section not in html
    assert (
        client.post("/settings/tokens/", {"name": "x", "scopes": ["diagnoses:read"]}).status_code
        == 403
    )
    assert client.post("/settings/domains/", {"domain": "acme.example"}).status_code == 403
    assert (
        client.post(
            "/settings/invitations/", {"email": "a@b.example", "role": "member"}
        ).status_code
        == 403
    )
    assert not ApiToken.objects.exists()


def test_a_token_is_created_on_the_page_and_its_secret_shown_once(acme, alice, web):
    client = web(alice)
    response = client.post(
        "/settings/tokens/",
        {"name": "GitLab CI", "scopes": ["diagnoses:write"], "expires_in_days": "30"},
    )

    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get()
    html = response.content.decode()
    start = html.index('<pre id="new-token-secret">') + len('<pre id="new-token-secret">')
    secret = html[start : html.index("</pre>", start)]
    assert secret.startswith("rc_live_")
    assert token.scopes == ["diagnoses:write"]
    assert token.expires_at is not None

    again = client.get("/settings/").content.decode()
    assert secret not in again
    assert token.prefix in again


def test_the_page_actions_work_for_an_admin(
    acme_with_admin, dave, web, django_capture_on_commit_callbacks
):
    client = web(dave)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/settings/invitations/", {"email": "ada@lovelace.example", "role": "member"})
    client.post("/settings/domains/", {"domain": "acme.example"})
    client.post("/settings/organization/", {"name": "Acme Research"})

    invitation = Invitation.objects.get()
    domain = Domain.objects.get()
    acme_with_admin.refresh_from_db()
    assert acme_with_admin.name == "Acme Research"
    html = client.get("/settings/").content.decode()
    assert "ada@lovelace.example" in html
    assert "acme.example" in html

    client.post(f"/settings/invitations/{invitation.id}/revoke/")
    client.post(f"/settings/domains/{domain.id}/remove/")
    assert Invitation.objects.get().status == "revoked"
    assert not Domain.objects.exists()


def test_domain_errors_are_shown_not_crashed_on(acme, alice, web):
    response = web(alice).post("/settings/domains/", {"domain": "gmail.com"}, follow=True)
    assert response.status_code == 200
    assert "public mail provider" in response.content.decode()


def test_owners_manage_members_on_the_page(acme, alice, bob, web):
    client = web(alice)
    bob_id = Membership.objects.get(user=bob).public_id

    client.post(f"/settings/members/{bob_id}/role/", {"role": "admin"})
    assert Membership.objects.get(user=bob).role == "admin"
    client.post(f"/settings/members/{bob_id}/ownership/")
    assert Membership.objects.get(user=bob).role == "owner"
    assert Membership.objects.get(user=alice).role == "admin"
    client.post("/settings/leave/")
    assert not Membership.objects.filter(organization=acme, user=alice).exists()


def test_the_last_owner_is_told_why_they_cannot_leave(acme, alice, web):
    response = web(alice).post("/settings/leave/", follow=True)
    assert "needs an owner" in response.content.decode()
    assert Membership.objects.filter(organization=acme, user=alice).exists()


def test_another_organisations_ids_are_404_on_the_page(acme, umbrella, alice, charlie, web):
    charlie_id = Membership.objects.get(user=charlie).public_id
    client = web(alice)
    assert client.post(f"/settings/members/{charlie_id}/remove/").status_code == 404
    assert (
        client.post(f"/settings/members/{charlie_id}/role/", {"role": "member"}).status_code == 404
    )
    assert Membership.objects.filter(user=charlie).exists()


def test_the_switcher_shows_for_several_organisations_and_sets_the_session(acme, bob, web):
    client = web(bob)
    assert 'name="organization"' not in client.get("/settings/").content.decode()

    own = create_organization(name="Bob's own", owner=bob)
    html = client.get("/settings/").content.decode()
    assert 'action="/accounts/organization/"' in html
    assert "Bob&#x27;s own" in html

    response = client.post(
        "/accounts/organization/", {"organization": str(own.pk), "next": "/settings/"}
    )
    assert response["Location"] == "/settings/"
    assert client.session[SESSION_ORGANIZATION] == str(own.pk)
    page = client.get("/settings/")
    assert actor_of(page.wsgi_request).organization == own


def test_the_switcher_refuses_an_organisation_one_is_not_in(acme, umbrella, bob, web):
    client = web(bob)
    response = client.post("/accounts/organization/", {"organization": str(umbrella.pk)})
    assert SESSION_ORGANIZATION not in client.session
    assert "not a member" in str([m.message for m in get_messages(response.wsgi_request)])


def test_settings_need_a_sign_in(client, db):
    response = client.get("/settings/")
    assert response["Location"] == "/accounts/login/?next=/settings/"
