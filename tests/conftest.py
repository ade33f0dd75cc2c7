"""One small world for every test: alice owns Acme, bob is a member, charlie is an outsider."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.actors import actor_for_person
from accounts.models import Organization
from accounts.services import (
    add_member,
    claim_domain,
    create_api_token,
    create_organization,
    mark_email_verified,
)
from billing_tiers.services import issue_evaluation_codes, redeem_evaluation_code
from tests.manage_command import manage
from tests.redis_namespace import delete_run_keys


@pytest.fixture(scope="session", autouse=True)
def _delete_this_runs_redis_keys() -> Iterator[None]:
    """At the end, delete the keys under this run's prefix: never a flush of a shared database."""
    yield
    # No Redis at all (a run of the library tests alone): then this run wrote nothing there.
    with contextlib.suppress(redis.ConnectionError):
        delete_run_keys()


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("embedded") / "db.sqlite3"
    migrated = manage(
        "migrate", "--noinput", "-v", "0", timeout=300, DATABASE_URL=f"sqlite:///{path}"
    )
    assert migrated.returncode == 0, migrated.stderr
    return path


@pytest.fixture
def embedded_sqlite(_migrated_sqlite: Path, tmp_path: Path) -> str:
    """The DATABASE_URL of a migrated SQLite database of the test's own, the quick start's kind:
    a copy of one migrated once per run (`manage.py migrate` takes seconds)."""
    path = tmp_path / "db.sqlite3"
    shutil.copyfile(_migrated_sqlite, path)
    return f"sqlite:///{path}"


@pytest.fixture
def alice(db: Any) -> Any:
    return get_user_model().objects.create_user("alice", "alice@acme.example", "pw-alice-123")


@pytest.fixture
def bob(db: Any) -> Any:
    return get_user_model().objects.create_user("bob", "bob@acme.example", "pw-bob-123")


@pytest.fixture
def charlie(db: Any) -> Any:
    return get_user_model().objects.create_user("charlie", "charlie@umbrella.example", "pw-c-123")


@pytest.fixture
def acme(alice: Any, bob: Any) -> Organization:
    organization = create_organization(name="Acme", owner=alice)
    add_member(organization=organization, user=bob)
    return organization


@pytest.fixture
def acme_scale(acme: Organization, alice: Any) -> Organization:
    """Acme on a Scale evaluation: alice verified, acme.example claimed, a code redeemed."""
    mark_email_verified(user=alice)
    claim_domain(actor=actor_for_person(alice, acme.pk), domain="acme.example")
    code = issue_evaluation_codes(count=1)[0].code
    redeem_evaluation_code(actor=actor_for_person(alice, acme.pk), code=code)
    return acme


@pytest.fixture
def umbrella(charlie: Any) -> Organization:
    return create_organization(name="Umbrella", owner=charlie)


@pytest.fixture
def acme_token(acme: Organization, alice: Any) -> str:
    _, key = create_api_token(organization=acme, created_by=alice, name="ci")
    return key


@pytest.fixture
def umbrella_token(umbrella: Organization, charlie: Any) -> str:
    _, key = create_api_token(organization=umbrella, created_by=charlie, name="ci")
    return key


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def acme_api(acme_token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {acme_token}")
    return client


@pytest.fixture
def umbrella_api(umbrella_token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {umbrella_token}")
    return client


@pytest.fixture
def catalogue(db: Any) -> Any:
    """The shipped catalogue loaded into the test database, as `make run` does."""
    from encyclopedia.services import load_catalogue

    return load_catalogue()


# `make test` runs the suite on two processes (pytest-xdist, `--dist loadgroup`). The end-to-end
# tests (real worker processes, servers killed and restarted, deadlines) and the slow timing tests
# (hostile input against a benign log) all go to one of them, one after the other, as in a run on
# one process: no two of them overlap, so a timing test never runs beside the worker or server of
# an end-to-end test. The other process takes everything else.
APART = "apart"


# `make test-fast` (`pytest --without-services`) runs the tests that need no service: no
# PostgreSQL, Redis, worker, browser or server. A test needs one when it asks for the database
# (pytest-django's fixtures or marker; every fixture built on `db` asks for it), or is end-to-end,
# in a browser or against the live API; what else reaches Redis or a server is named in
# SERVICE_PATHS. test-fast points PostgreSQL and Redis at a closed port, so that a test put on
# the wrong side fails there rather than using whatever runs on this machine, and a skipped test
# fails the run: the fast run leaves tests out by this rule only, never quietly.
SERVICE_FIXTURES = frozenset({"db", "transactional_db", "live_server"})
SERVICE_MARKERS = ("django_db", "e2e", "browser", "schemathesis")
SERVICE_PATHS: tuple[str, ...] = (
    "tests/e2e/",
    "tests/browser/",
    # Redis itself (the broker, the cache, the rate-limit script) or the services' launcher
    "tests/plumbing/test_broker.py",
    "tests/plumbing/test_cache.py",
    "tests/config/test_health.py",
    "tests/plumbing/test_ratelimit.py",
    "tests/plumbing/test_redis_trips.py",
    "tests/config/test_with_services.py",
    "tests/config/test_worker_connections.py",
)


# What the fast run does not even collect: files and folders where every test needs a service by
# the rule above (SERVICE_PATHS, or a service marker on the whole module), for collecting them
# costs time of its own in each process. The schemathesis module builds a test for every API
# operation from the live OpenAPI document: about 7 s, half of a process's collection.
UNCOLLECTED_WITHOUT_SERVICES = (*SERVICE_PATHS, "tests/diagnosis/test_schemathesis.py")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("--without-services"):
        return None
    try:
        relative = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    if collection_path.is_dir():
        relative += "/"
    return True if relative.startswith(UNCOLLECTED_WITHOUT_SERVICES) else None


def needs_services(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(name) for name in SERVICE_MARKERS):
        return True
    if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return item.nodeid.startswith(SERVICE_PATHS)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--without-services",
        action="store_true",
        help="only the tests that need no PostgreSQL, Redis, worker, browser or server",
    )


@pytest.hookimpl(trylast=True)  # after tests/browser/conftest.py marks its tests e2e
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        _name_schemathesis_operation(item)
        if item.get_closest_marker("e2e") or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group(APART))
    if config.getoption("--without-services"):
        left_out = [item for item in items if needs_services(item)]
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not needs_services(item)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In the run without services a skip is a failure: nothing is left out silently."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    # The team's corpus (../shared) is not in a user's clone: a test that reads it skips there,
    # saying so, and that is no service left out.
    skipped = [report for report in skipped if "../shared" not in str(report.longrepr)]
    if session.config.getoption("--without-services") and skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if reporter is not None:
            reporter.write_line(
                f"--without-services: {len(skipped)} test(s) skipped; a test that needs a "
                "service belongs in tests/conftest.py's rule, not in a skip",
                red=True,
            )


def _name_schemathesis_operation(item: pytest.Item) -> None:
    """schemathesis 4.32 names the test of each API operation `test[GET /path]`, but on pytest 9
    its node id leaves the operation out, so all of them share one id, and pytest-xdist, which
    hands out tests by id, ran one operation of 47. The id gets the operation back (pytest builds
    a parametrized test's id the same way)."""
    label = getattr(item, "operation_label", None)
    node_id = getattr(item, "_id", None)
    if label and node_id is not None and node_id.params is None:
        item._id = node_id.with_params(label)
