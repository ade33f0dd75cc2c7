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


def service_settings(name: str) -> dict[str, str]:
    """The settings `make loadtest` runs the service with (bench/loadtest/run.py), limits lifted
    for one busy address: every load test user, and every in-process submission, is one."""
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "0",
        "SECRET_KEY": f"{name}-{uuid.uuid4().hex}",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "WARNING",
        "TIER_FREE_DAILY_DIAGNOSES": "100000000",
        # Per second, not per minute: DRF's throttle keeps each request's time for its window,
        # and a minute of this load is a list of thousands read and written by every submission.
        "THROTTLE_SUBMISSIONS_PER_ADDRESS": "1000000/second",
        # The same for the bound on concurrent uploads (plumbing/concurrency.py): per address
        # and per token against slow clients; here dozens of users share one address and a few
        # tokens, each sending as fast as it is answered.
        "CONCURRENT_UPLOADS_PER_ADDRESS": "1000",
        "CONCURRENT_UPLOADS_PER_TOKEN": "1000",
    }


def configure(name: str, **extra: str) -> str:
    """Set the service's settings for a bench named `name` in this process (before Django is
    imported) and give back its Redis key prefix."""
    prefix = f"rootcause-{name}-{uuid.uuid4().hex[:8]}:"
    os.environ.update(
        service_settings(name),
        REDIS_KEY_PREFIX=prefix,
        ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
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


def tokens_and_logs() -> tuple[list[str], list[bytes]]:
    """The load test's callers and logs: ORGANIZATIONS organisations, each with an API token,
    and 32 distinct 50 KB training logs."""
    from django.contrib.auth import get_user_model

    from accounts.services import create_api_token, create_organization
    from bench.genlog import generate_log

    tokens = []
    for i in range(ORGANIZATIONS):
        owner = get_user_model().objects.create_user(
            f"load{i}", f"load{i}@acme.example", "pw-load-123"
        )
        organization = create_organization(name=f"Load {i}", owner=owner)
        tokens.append(create_api_token(organization=organization, created_by=owner, name="l")[1])
    return tokens, [b"".join(generate_log(50 * 1024, seed=seed)) for seed in range(32)]


def submitter() -> Callable[[int], None]:
    """A function that makes `count` of the load test's submissions through Django's whole
    handler, after making the organisations and their tokens."""
    from django.test import Client

    tokens, logs = tokens_and_logs()
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


def wsgi_submitter() -> Callable[[int], None]:
    """`submitter`'s submissions through the WSGI application gunicorn serves
    (config.wsgi.application, its upload deadline included), called with the environ gunicorn
    gives it for the load test's request: no test client in between."""
    import io
    import sys

    from config.wsgi import application

    tokens, logs = tokens_and_logs()
    answers: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        answers.append(status)

    def submit(count: int) -> None:
        for i in range(count):
            body = logs[i % len(logs)]
            environ = {
                "REQUEST_METHOD": "POST",
                "PATH_INFO": "/api/v1/diagnoses",
                "QUERY_STRING": "",
                "SCRIPT_NAME": "",
                "SERVER_NAME": "127.0.0.1",
                "SERVER_PORT": "8000",
                "SERVER_PROTOCOL": "HTTP/1.1",
                "REMOTE_ADDR": "127.0.0.1",
                "REMOTE_PORT": "50000",
                "wsgi.url_scheme": "http",
                "wsgi.input": io.BytesIO(body),
                "wsgi.errors": sys.stderr,
                "wsgi.version": (1, 0),
                "wsgi.multithread": True,
                "wsgi.multiprocess": True,
                "wsgi.run_once": False,
                "CONTENT_TYPE": "text/plain",
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_HOST": "127.0.0.1:8000",
                "HTTP_AUTHORIZATION": f"Bearer {tokens[i % len(tokens)]}",
                "HTTP_X_ROOTCAUSE_FILENAME": "train.log",
                "HTTP_USER_AGENT": "locust",
                "HTTP_ACCEPT": "*/*",
                "HTTP_CONNECTION": "keep-alive",
            }
            answer = application(environ, start_response)
            b"".join(answer)
            getattr(answer, "close", lambda: None)()
            if not answers[-1].startswith("202"):
                raise SystemExit(f"answered {answers[-1]}")

    return submit
