"""What the in-process benches of the service share (bench/intake_cpu.py, bench/worker_cpu.py):
the settings `make loadtest` runs the service with, a database and a Redis key prefix of their
own, and the load test's submissions (a 50 KB training log, raw, from 40 organisations' tokens
taken in turn)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator

ORGANIZATIONS = 40


def configure(name: str, **extra: str) -> str:
    """Set the service's settings for a bench named `name` (before Django is imported) and give
    back its Redis key prefix: as bench/loadtest/run.py runs the service, with the limits lifted
    for one busy address."""
    prefix = f"rootcause-{name}-{uuid.uuid4().hex[:8]}:"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        REDIS_KEY_PREFIX=prefix,
        DEBUG="0",
        SECRET_KEY=f"{name}-{uuid.uuid4().hex}",
        ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        LOG_LEVEL="WARNING",
        TIER_FREE_DAILY_DIAGNOSES="100000000",
        THROTTLE_SUBMISSIONS_PER_ADDRESS="1000000/second",
        CONCURRENT_UPLOADS_PER_ADDRESS="1000",
        CONCURRENT_UPLOADS_PER_TOKEN="1000",  # noqa: S106 - a count, not a secret
        **extra,
    )
    return prefix


@contextlib.contextmanager
def own_database(name: str, prefix: str) -> Iterator[None]:
    """Django set up on a database of its own, Celery publishing to Redis; the database dropped
    (other connections to it, such as a worker's threads', ended first) and the prefix's keys
    deleted at the end."""
    import django

    django.setup()
    import redis
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from config.celery import app

    setup_test_environment()
    connection.settings_dict["TEST"]["NAME"] = f"{name}_{uuid.uuid4().hex[:12]}"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        with connection._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                [connection.settings_dict["NAME"]],
            )
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        keys = redis.Redis.from_url(settings.REDIS_URL)
        for key in keys.scan_iter(f"{prefix}*"):
            keys.delete(key)


def submitter() -> Callable[[int], None]:
    """A function that makes `count` of the load test's submissions through Django's whole
    handler, after making the organisations and their tokens."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.services import create_api_token, create_organization
    from bench.genlog import generate_log

    tokens = []
    for i in range(ORGANIZATIONS):
        owner = get_user_model().objects.create_user(
            f"load{i}", f"load{i}@acme.example", "pw-load-123"
        )
        organization = create_organization(name=f"Load {i}", owner=owner)
        tokens.append(create_api_token(organization=organization, created_by=owner, name="l")[1])
    logs = [b"".join(generate_log(50 * 1024, seed=seed)) for seed in range(32)]
    client = Client()

    def submit(count: int) -> None:
        for i in range(count):
            response = client.post(
                "/api/v1/diagnoses",
                logs[i % len(logs)],
                content_type="text/plain",
                HTTP_AUTHORIZATION=f"Bearer {tokens[i % len(tokens)]}",
                HTTP_X_ROOTCAUSE_FILENAME="train.log",
            )
            if response.status_code != 202:
                raise SystemExit(f"{response.status_code}: {response.content[:300]!r}")

    return submit
