"""/api/v1/organization/masking-rules and the settings page's section: owners and admins add
and delete, members read, tokens are refused, another organisation's rule is 404, and a rule
the library refuses is a 400 problem that names why."""

from __future__ import annotations

import pytest

from accounts.models import MaskingRule
from accounts.services import create_masking_rule

RULES = "/api/v1/organization/masking-rules"


def _add(client, **body):
    return client.post(RULES, {"kind": "term", "value": "bluebird", **body}, format="json")


def test_an_admin_adds_a_term_and_a_pattern_and_every_member_reads_them(
    acme_with_admin, dave, bob, session_api
):
    term = _add(session_api(dave), label="project codename")
    pattern = _add(session_api(dave), kind="pattern", value=r"\bOPS-\d{4,6}\b")

    assert term.status_code == 201, term.content
    assert pattern.status_code == 201, pattern.content
    assert term.json()["label"] == "PROJECT_CODENAME"
    assert term.json()["created_by"] == "dave@acme.example"
    assert pattern.json()["label"] == "ORG_PATTERN"

    listed = session_api(bob).get(RULES)
    assert listed.status_code == 200
    assert [(r["kind"], r["value"], r["label"]) for r in listed.json()["results"]] == [
        ("term", "bluebird", "PROJECT_CODENAME"),
        ("pattern", r"\bOPS-\d{4,6}\b", "ORG_PATTERN"),
    ]


def test_the_list_has_a_pinned_query_count(
    acme, alice, bob, session_api, django_assert_num_queries
):
    for value in ("bluebird", "falcon", "heron"):
        create_masking_rule(organization=acme, created_by=alice, kind="term", value=value)
    client = session_api(bob)
    client.get(RULES)  # warm the session

    # session, user, actor's membership, count, page (with created_by)
    with django_assert_num_queries(5):
        response = client.get(RULES)

    assert response.json()["count"] == 3


def test_a_member_cannot_add_or_delete(acme, alice, bob, session_api):
    rule = create_masking_rule(organization=acme, created_by=alice, kind="term", value="bluebird")
    client = session_api(bob)

    assert _add(client, value="falcon").status_code == 403
    assert client.delete(f"{RULES}/{rule.id}").status_code == 403
    assert MaskingRule.objects.count() == 1


def test_api_tokens_are_refused_whatever_they_ask(acme_api):
    for response in (acme_api.get(RULES), _add(acme_api)):
        assert response.status_code == 403
        assert response["Content-Type"] == "application/problem+json"


def test_a_visitor_is_refused(api):
    assert api.get(RULES).status_code in (401, 403)


def test_another_organisations_rule_is_not_found(acme, alice, umbrella, charlie, session_api):
    rule = create_masking_rule(organization=acme, created_by=alice, kind="term", value="bluebird")

    response = session_api(charlie).delete(f"{RULES}/{rule.id}")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert MaskingRule.objects.filter(id=rule.id).exists()
    listed = session_api(charlie).get(RULES).json()
    assert listed["count"] == 0


def test_an_owner_deletes_a_rule(acme, alice, session_api):
    rule = create_masking_rule(organization=acme, created_by=alice, kind="term", value="bluebird")

    response = session_api(alice).delete(f"{RULES}/{rule.id}")

    assert response.status_code == 204
    assert not MaskingRule.objects.exists()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"kind": "pattern", "value": r"(\w+)-\1"}, "Back-references are unsupported"),
        ({"kind": "pattern", "value": "[a-z"}, "Unterminated character class"),
        ({"kind": "pattern", "value": "(?<=host=)node"}, "Zero-width assertions"),
        ({"kind": "pattern", "value": "x*"}, "matches the empty string"),
        ({"kind": "pattern", "value": "x" * 201}, "201 characters; at most 200"),
        ({"kind": "term", "value": "a"}, "at least 2 characters"),
        ({"kind": "term", "value": "acme", "label": "9lives"}, "label"),
    ],
)
def test_a_refused_rule_is_a_problem_naming_why(acme, alice, session_api, body, problem):
    response = session_api(alice).post(RULES, body, format="json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    payload = response.json()
    assert payload["type"] == "https://rootcause.dev/problems/invalid-masking-rule"
    assert payload["title"] == "Invalid masking rule"
    assert problem in payload["detail"]
    assert not MaskingRule.objects.exists()


def test_an_unknown_kind_is_an_invalid_request(acme, alice, session_api):
    response = _add(session_api(alice), kind="regex")
    assert response.status_code == 400
    assert response.json()["type"].endswith("/invalid-request")


def test_the_limits_are_settings(acme, alice, session_api, settings):
    settings.MASKING_RULES_PER_ORGANIZATION = 2
    settings.MASKING_RULE_MAX_LENGTH = 10
    client = session_api(alice)

    assert _add(client, value="bluebird").status_code == 201
    long = _add(client, value="falcon-nine")
    assert long.status_code == 400
    assert "at most 10" in long.json()["detail"]
    assert _add(client, value="falcon").status_code == 201
    third = _add(client, value="heron")
    assert third.status_code == 400
    assert "2 masking rules, the most allowed" in third.json()["detail"]
    assert MaskingRule.objects.count() == 2


def test_a_term_twice_in_any_case_is_a_conflict(acme, alice, session_api):
    client = session_api(alice)
    assert _add(client, value="Bluebird").status_code == 201
    again = _add(client, value=" BLUEBIRD ")
    assert again.status_code == 409
    assert again["Content-Type"] == "application/problem+json"


def test_rules_are_the_organisations_own(acme, alice, umbrella, charlie, session_api):
    assert _add(session_api(alice)).status_code == 201
    # The same term in another organisation is its own rule.
    assert _add(session_api(charlie)).status_code == 201
    assert MaskingRule.objects.filter(organization=umbrella).count() == 1


# --- The settings page ------------------------------------------------------------------------


def test_managers_add_and_delete_on_the_settings_page(acme, alice, web):
    client = web(alice)

    added = client.post(
        "/settings/masking-rules/",
        {"kind": "term", "value": "bluebird", "label": "codename"},
        follow=True,
    )
    assert added.status_code == 200
    assert "is masked as CODENAME from now on" in added.content.decode()
    rule = MaskingRule.objects.get()
    assert (rule.value, rule.label, rule.created_by) == ("bluebird", "CODENAME", alice)

    page = client.get("/settings/").content.decode()
    assert 'id="masking-rules"' in page
    assert "<code>bluebird</code>" in page
    assert f"/settings/masking-rules/{rule.id}/delete/" in page

    deleted = client.post(f"/settings/masking-rules/{rule.id}/delete/", follow=True)
    assert "is no longer masked" in deleted.content.decode()
    assert not MaskingRule.objects.exists()


def test_a_refused_rule_is_flashed_on_the_page(acme, alice, web):
    response = web(alice).post(
        "/settings/masking-rules/", {"kind": "pattern", "value": "a*"}, follow=True
    )
    assert "matches the empty string" in response.content.decode()
    assert not MaskingRule.objects.exists()


def test_members_see_the_rules_without_the_controls(acme, alice, bob, web):
    rule = create_masking_rule(organization=acme, created_by=alice, kind="term", value="bluebird")
    client = web(bob)

    page = client.get("/settings/").content.decode()
    assert "<code>bluebird</code>" in page
    assert "/settings/masking-rules/" not in page
    assert (
        client.post("/settings/masking-rules/", {"kind": "term", "value": "x1"}).status_code == 403
    )
    assert client.post(f"/settings/masking-rules/{rule.id}/delete/").status_code == 403
    assert MaskingRule.objects.count() == 1


def test_another_organisations_rule_cannot_be_deleted_from_the_page(
    acme, alice, umbrella, charlie, web
):
    rule = create_masking_rule(organization=acme, created_by=alice, kind="term", value="bluebird")
    response = web(charlie).post(f"/settings/masking-rules/{rule.id}/delete/")
    assert response.status_code == 404
    assert MaskingRule.objects.count() == 1


# --- The admin --------------------------------------------------------------------------------


def test_the_admin_checks_rules_as_the_api_does(acme, alice, client):
    from django.contrib.auth.models import User

    staff = User.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(staff)
    url = "/admin/accounts/maskingrule/add/"

    refused = client.post(url, {"organization": acme.pk, "kind": "pattern", "value": "(a)\\1"})
    assert refused.status_code == 200
    assert "Back-references are unsupported" in refused.content.decode()

    added = client.post(url, {"organization": acme.pk, "kind": "term", "value": " Heron "})
    assert added.status_code == 302
    rule = MaskingRule.objects.get()
    assert (rule.value, rule.label, rule.created_by) == ("Heron", "ORG_TERM", staff)
