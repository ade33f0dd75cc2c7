from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_networks
from tests.manage_command import manage

ROOT = Path(__file__).resolve().parents[2]


def test_typed_helpers_fail_loudly_on_malformed_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    monkeypatch.setenv("X_INT", "12MB")
    monkeypatch.setenv("X_SMALL", "0")

    with pytest.raises(ImproperlyConfigured, match="X_BOOL"):
        env_bool("X_BOOL")
    with pytest.raises(ImproperlyConfigured, match="X_INT"):
        env_int("X_INT", 1)
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("X_SMALL", 5, minimum=1)


def test_typed_helpers_read_well_formed_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "off")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a.example, b.example,,")

    assert env_bool("X_BOOL", default=True) is False
    assert env_int("X_INT", 1) == 42
    assert env_list("X_LIST", []) == ["a.example", "b.example"]
    assert env_bool("X_UNSET", default=True) is True


def test_networks_are_normalised_and_a_malformed_one_names_the_variable(monkeypatch):
    monkeypatch.setenv("X_NETS", "10.1.2.3/8, ::1, 192.0.2.7")
    assert env_networks("X_NETS", []) == ["10.0.0.0/8", "::1/128", "192.0.2.7/32"]
    monkeypatch.setenv("X_NETS", "")
    assert env_networks("X_NETS", ["127.0.0.0/8"]) == []
    monkeypatch.setenv("X_NETS", "10.0.0.0/8,localhost")
    with pytest.raises(ImproperlyConfigured, match=r"X_NETS.*localhost"):
        env_networks("X_NETS", [])


@pytest.mark.heavy  # a manage.py process each
def test_metrics_are_for_loopback_alone_unless_configured():
    code = "from django.conf import settings; print(settings.METRICS_ALLOWED_NETWORKS)"
    assert manage("shell", "-c", code).stdout.splitlines()[-1] == "['127.0.0.0/8', '::1/128']"
    with_token = manage("shell", "-c", code, METRICS_TOKEN="t" * 32)
    assert with_token.stdout.splitlines()[-1] == "[]"
    short = manage("check", METRICS_TOKEN="short")
    assert short.returncode != 0
    assert "METRICS_TOKEN" in short.stderr


@pytest.mark.heavy  # a manage.py process of its own
def test_production_settings_pass_check_deploy():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY="k" * 20 + "-production-secret-with-enough-entropy-0123456789",
        ALLOWED_HOSTS="rootcause.example",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/rootcause",
        REDIS_URL="redis://127.0.0.1:6379/15",
    )

    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.heavy  # a manage.py process of its own
def test_without_debug_a_secret_key_is_required():
    result = manage("check", DEBUG="0", SECRET_KEY="")

    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.heavy  # a manage.py process of its own
def test_a_malformed_database_url_names_the_variable():
    result = manage("check", DATABASE_URL="nonsense://")

    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


@pytest.mark.heavy  # a manage.py process of its own
def test_the_embedded_default_uses_sqlite_and_eager_celery():
    code = (
        "from django.conf import settings;"
        "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = manage("shell", "-c", code)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["django.db.backends.sqlite3", "True"]


@pytest.mark.parametrize(
    ("url", "threshold", "options"),
    [
        (
            "postgres://u@127.0.0.1:5432/x",
            None,
            "{'server_side_binding': True, 'prepare_threshold': 5}",
        ),
        (
            "postgres://u@127.0.0.1:5432/x",
            "0",
            "{'server_side_binding': True, 'prepare_threshold': None}",
        ),
        ("sqlite:///x.sqlite3", None, "{}"),
    ],
)
@pytest.mark.heavy  # a manage.py process each
def test_postgresql_statements_are_prepared_unless_turned_off(url, threshold, options):
    code = (
        "from django.conf import settings; print(settings.DATABASES['default'].get('OPTIONS', {}))"
    )
    env = {"DATABASE_URL": url}
    if threshold is not None:
        env["DB_PREPARE_THRESHOLD"] = threshold
    result = manage("shell", "-c", code, **env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == options


def test_a_statement_run_often_is_prepared_and_answers_the_same(acme_token):
    """The token lookup of every API call, past the threshold: PostgreSQL holds it prepared for
    this connection, and it still finds the token, and only it."""
    from django.db import connection

    from accounts.selectors import token_for_secret
    from accounts.tokens import hash_secret

    found = [token_for_secret(acme_token) for _ in range(8)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]

    assert any("FROM accounts_apitoken" in statement for statement in prepared)
    first = found[0]
    assert first is not None
    assert first.digest == hash_secret(acme_token)
    assert all(token is not None and token.pk == first.pk for token in found)
