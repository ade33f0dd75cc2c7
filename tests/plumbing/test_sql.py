"""The hand-written hot-path statements (plumbing/sql.py) answer as the ORM queries they replace:
the same rows, the same converted values, on PostgreSQL here and on the embedded SQLite."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import DataError, connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from accounts import selectors, tokens
from accounts.actors import Actor
from accounts.models import ApiToken, Domain, Membership, Organization, VerifiedEmail
from accounts.services import add_member, create_api_token, mark_email_verified
from billing_tiers.entitlements import tier_for
from diagnosis.models import Diagnosis
from plumbing import sql
from tests.manage_command import manage

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def _orm_token(secret: str) -> ApiToken | None:
    # What token_for_secret was before it was written by hand.
    return (
        ApiToken.objects.select_related("organization")
        .filter(digest=tokens.hash_secret(secret), revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )


def _fields(instance: Any) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_a_live_token_comes_back_as_the_orm_loads_it(acme: Organization, alice: Any) -> None:
    _token, secret = create_api_token(
        organization=acme,
        created_by=alice,
        name="ci",
        scopes=["diagnoses:write"],
        expires_at=timezone.now() + timedelta(days=1),
    )

    found = selectors.token_for_secret(secret)
    expected = _orm_token(secret)

    assert found is not None
    assert expected is not None
    assert _fields(found) == _fields(expected)
    assert found.scopes == ["diagnoses:write"]  # JSON decoded, not text
    assert found.expires_at is not None
    assert found.expires_at.tzinfo is not None
    # The organisation came with it: reading it asks nothing more.
    assert "organization" in found._state.fields_cache
    assert _fields(found.organization) == _fields(acme)


def test_revoked_expired_and_unknown_tokens_are_refused_as_before(
    acme: Organization, alice: Any
) -> None:
    revoked, revoked_secret = create_api_token(organization=acme, created_by=alice, name="a")
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    expired, expired_secret = create_api_token(organization=acme, created_by=alice, name="b")
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _, live_secret = create_api_token(organization=acme, created_by=alice, name="c")
    unknown = tokens.generate_secret()

    for secret in (revoked_secret, expired_secret, unknown, "not-a-token"):
        assert selectors.token_for_secret(secret) is None
        assert _orm_token(secret) is None
    assert selectors.token_for_secret(live_secret) is not None


def test_the_standing_facts_follow_domains_managers_and_their_addresses(
    acme: Organization, alice: Any, bob: Any
) -> None:
    def facts() -> tuple[list[str], set[str]]:
        found = selectors.standing_facts(acme)
        return found.claimed_domains, found.verified_manager_domains

    assert facts() == ([], set())
    assert tier_for(Actor(organization=acme)) == "free"

    # Claims, earliest first; a member's verified address does not count, a manager's does.
    Domain.objects.create(organization=acme, domain="acme.example")
    Domain.objects.create(organization=acme, domain="b.example")
    mark_email_verified(user=bob)
    assert facts() == (["acme.example", "b.example"], set())
    Membership.objects.filter(organization=acme, user=bob).update(role=Membership.Role.ADMIN)
    assert facts() == (["acme.example", "b.example"], {"acme.example"})
    assert selectors.workplace_domain(acme) == "acme.example"
    assert tier_for(Actor(organization=acme)) == "workplace"

    # An address changed since it was verified is not verified; an inactive manager counts not.
    get_user_model().objects.filter(pk=bob.pk).update(email="Bob@Other.example")
    assert facts()[1] == set()
    VerifiedEmail.objects.create(user=bob, email="bob@other.example")
    assert facts()[1] == {"other.example"}  # the current address, compared lower-cased
    get_user_model().objects.filter(pk=bob.pk).update(is_active=False)
    assert facts()[1] == set()
    assert selectors.has_verified_manager(acme) is False

    # Another organisation's managers are not this one's.
    other = Organization.objects.create(name="Other")
    add_member(organization=other, user=alice, role=Membership.Role.OWNER)
    mark_email_verified(user=alice)
    assert selectors.standing_facts(other).verified_manager_domains == {"acme.example"}
    assert facts() == (["acme.example", "b.example"], {"acme.example"})  # alice owns acme too


def test_instances_are_converted_like_the_orm_s(acme: Organization) -> None:
    rows = sql.fetch_all(
        f"SELECT {sql.columns(Organization, 'o')} FROM accounts_organization o WHERE o.id = %s",  # noqa: S608 - column names only
        [sql.param(Organization, "id", acme.pk)],
    )
    assert _fields(sql.instance(Organization, rows[0])) == _fields(acme)


def _insert_selecting_from(rows: int, instance: Diagnosis) -> None:
    statement = sql.insert_selecting(type(instance), "source")
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH source AS (SELECT * FROM generate_series(1, %s)) {statement}",  # noqa: S608 - names only
            [rows, *sql.insert_values(instance)],
        )


def test_an_insert_selecting_saves_every_field_as_the_orm_reads_it_back(
    acme: Organization, alice: Any
) -> None:
    # Every kind of column a Diagnosis has: UUIDs, a foreign key to an integer key, text,
    # integers, timestamps, JSON lists and objects, NULLs.
    diagnosis = Diagnosis(
        organization=acme,
        created_by=alice,
        source="api",
        filename="train.log",
        size_bytes=2**40,
        labels=["nightly", "gpu:8"],
        result={"slug": "cuda-oom", "ranks": [0, 17]},
        progress=40,
        lease_token=uuid.uuid4(),
        lease_expires_at=timezone.now() + timedelta(minutes=5),
        anonymous_subject="",
    )

    _insert_selecting_from(1, diagnosis)

    assert _fields(Diagnosis.objects.get(pk=diagnosis.pk)) == _fields(diagnosis)
    assert diagnosis.created_at is not None  # auto_now_add, as the ORM's save fills it


def test_an_insert_selecting_adds_a_row_only_for_each_row_of_its_source(acme: Organization) -> None:
    _insert_selecting_from(0, Diagnosis(organization=acme, source="api", size_bytes=1))

    assert not Diagnosis.objects.exists()


def test_an_insert_selecting_refuses_a_value_too_long_for_its_column(acme: Organization) -> None:
    # Cast without its length, the value reaches the column whole and fails there, as the
    # ORM's INSERT does; a cast to varchar(255) would have cut it silently.
    diagnosis = Diagnosis(organization=acme, source="api", size_bytes=1, filename="x" * 256)

    with pytest.raises(DataError), transaction.atomic():
        _insert_selecting_from(1, diagnosis)


def test_the_embedded_sqlite_mode_submits_and_diagnoses_with_a_token(embedded_sqlite: str) -> None:
    # The quick start's database: the hand-written statements run on SQLite too (UUIDs as text,
    # datetimes as strings, booleans as integers).
    env = {"DATABASE_URL": embedded_sqlite, "DEBUG": "1"}
    code = """
import json
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient
from accounts.services import claim_domain, create_api_token, create_masking_rule, create_organization, mark_email_verified
from accounts.actors import actor_for_person
from accounts.selectors import token_for_secret
owner = get_user_model().objects.create_user("o", "o@acme.example", "pw-o-12345")
organization = create_organization(name="Acme", owner=owner)
mark_email_verified(user=owner)
claim_domain(actor=actor_for_person(owner, organization.pk), domain="acme.example")
_, secret = create_api_token(organization=organization, created_by=owner, name="ci")
create_masking_rule(organization=organization, created_by=owner, kind="term", value="bluebird")
client = APIClient()
client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
answer = client.post("/api/v1/diagnoses", data=b"torch.OutOfMemoryError: CUDA out of memory.\\n",
                     content_type="text/plain", HTTP_HOST="localhost",
                     HTTP_X_ROOTCAUSE_FILENAME="bluebird-run.log")
token = token_for_secret(secret)
print(json.dumps({"status": answer.status_code, "diagnosis": answer.json().get("status"),
                  "filename": answer.json().get("filename"),
                  "limit": answer["RateLimit-Limit"], "remaining": answer["RateLimit-Remaining"],
                  "organization": token.organization.name, "scopes": token.scopes,
                  "workplace": settings.TIER_DAILY_DIAGNOSES["workplace"]}))
"""
    result = manage("shell", "-c", code, timeout=300, **env)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["status"] == 202
    assert answer["diagnosis"] == "done"  # eager: the pipeline ran as the row committed
    assert answer["organization"] == "Acme"
    # The organisation's masking rule, read with the tier's facts, masked the file name.
    assert "bluebird" not in answer["filename"]
    assert answer["filename"].endswith("-run.log")
    assert isinstance(answer["scopes"], list)
    assert answer["scopes"]
    # The workplace tier's allowance, worked out by the hand-written statement, one unit used.
    assert int(answer["limit"]) == answer["workplace"]
    assert int(answer["remaining"]) == int(answer["limit"]) - 1


def test_an_insert_stores_what_create_would(acme: Organization) -> None:
    from diagnosis.models import Diagnosis

    made = Diagnosis(
        organization=acme, source="api", size_bytes=5, labels=["a", "b"], filename="x.log"
    )
    sql.insert(made)
    created = Diagnosis.objects.create(
        organization=acme, source="api", size_bytes=5, labels=["a", "b"], filename="x.log"
    )

    stored = Diagnosis.objects.get(pk=made.pk)
    assert not made._state.adding
    assert made.created_at is not None  # auto_now_add filled in, as create does
    assert stored.created_at == made.created_at
    assert stored.updated_at == made.updated_at
    skip = {"id", "created_at", "updated_at"}
    assert {k: v for k, v in _fields(stored).items() if k not in skip} == {
        k: v for k, v in _fields(Diagnosis.objects.get(pk=created.pk)).items() if k not in skip
    }
    assert stored.labels == ["a", "b"]  # JSON stored as JSON, not as its text


def test_insert_values_prepare_text_as_its_fields_would(acme: Organization) -> None:
    # The text fields' values are taken as they are only when they are a str or None; a lazy
    # string, a str subclass or a number still go through the field's preparation.
    from django.utils.functional import lazy
    from django.utils.safestring import mark_safe

    diagnosis = Diagnosis(
        organization=acme,
        source=lazy(lambda: "api", str)(),
        size_bytes=1,
        filename=mark_safe("train.log"),  # a str subclass
        job=42,  # type: ignore[misc]  # a number where a str goes: made a str, as the ORM does
        commit=None,
    )
    fields = type(diagnosis)._meta.concrete_fields
    text = [f for f in fields if isinstance(f, models.CharField | models.TextField)]

    values = dict(zip((f.attname for f in fields), sql.insert_values(diagnosis), strict=True))

    assert len(text) > 10  # the fields the shortcut is for
    assert {f.attname: values[f.attname] for f in text} == {
        f.attname: f.get_db_prep_save(f.pre_save(diagnosis, add=True), connection) for f in text
    }
    assert values["source"] == "api"
    assert type(values["source"]) is str
    assert values["job"] == "42"
    assert values["commit"] is None
