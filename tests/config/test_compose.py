"""docker-compose.yml cannot be run here (no Docker engine), so its consistency is checked."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _settings_variables() -> set[str]:
    source = (ROOT / "config" / "settings.py").read_text()
    return set(re.findall(r'env_(?:str|bool|int|list)\(\s*"([A-Z_]+)"', source))


def _gunicorn_variables() -> set[str]:
    source = (ROOT / "gunicorn.conf.py").read_text()
    return set(re.findall(r'(?:_int|environ\.get)\(\s*"(GUNICORN_[A-Z_]+)"', source))


def test_the_services_of_the_real_mode_layout_are_all_there():
    services = _compose()["services"]

    assert set(services) == {"proxy", "postgres", "redis", "web", "worker", "beat"}
    for name, service in services.items():
        assert "healthcheck" in service, name
        assert service["restart"] == "unless-stopped", name
    for name in ("web", "worker", "beat"):
        assert services[name]["build"] == "."
    assert (ROOT / "Dockerfile").exists()


def test_the_app_services_run_the_right_commands():
    services = _compose()["services"]

    assert "gunicorn -c gunicorn.conf.py config.wsgi:application" in services["web"]["command"]
    assert "migrate" in services["web"]["command"]
    assert "load_catalogue" in services["web"]["command"]
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]


def test_the_environment_names_only_variables_the_settings_read():
    services = _compose()["services"]
    known = _settings_variables() | _gunicorn_variables()

    for name in ("web", "worker", "beat"):
        environment = services[name]["environment"]
        assert set(environment) <= known, set(environment) - known
        assert environment["DEBUG"] == "0"
        assert environment["DATABASE_URL"].startswith("postgres://")
        assert environment["DATABASE_URL"].split("@")[1].startswith("postgres:5432/")
        assert environment["REDIS_URL"].startswith("redis://redis:6379")


def test_the_database_credentials_agree_with_the_postgres_service():
    compose = _compose()
    db_env = compose["services"]["postgres"]["environment"]
    url = compose["services"]["web"]["environment"]["DATABASE_URL"]

    expected = (
        f"postgres://{db_env['POSTGRES_USER']}:{db_env['POSTGRES_PASSWORD']}"
        f"@postgres:5432/{db_env['POSTGRES_DB']}"
    )
    assert url == expected


def test_env_example_documents_every_variable_the_settings_read():
    documented = set(re.findall(r"^([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))

    assert _settings_variables() <= documented, _settings_variables() - documented


def test_the_worker_and_beat_health_checks_prove_tasks_are_consumed():
    services = _compose()["services"]

    # Not `celery inspect ping`, which the main process answers even when it consumes nothing.
    assert services["worker"]["healthcheck"]["test"][:4] == [
        "CMD",
        "python",
        "manage.py",
        "check_worker",
    ]
    assert services["beat"]["healthcheck"]["test"][:4] == [
        "CMD",
        "python",
        "manage.py",
        "check_beat",
    ]
    for name in ("worker", "beat"):
        command = services[name]["healthcheck"]["test"][3]
        assert (ROOT / "workers" / "management" / "commands" / f"{command}.py").exists()


def test_the_image_and_the_compose_file_run_gunicorn_with_the_repository_settings():
    assert (
        'CMD ["gunicorn", "-c", "gunicorn.conf.py", "config.wsgi:application"]'
        in (ROOT / "Dockerfile").read_text()
    )
    assert (ROOT / "gunicorn.conf.py").exists()
