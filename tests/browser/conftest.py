"""Browser tests: Playwright driving Debian's Chromium against Django's live server.

No browser is ever downloaded: the tests launch `/usr/bin/chromium` (`apt-get install chromium`;
`.ci/run` installs it) and are skipped, saying so, where it is missing. The pages come from
pytest-django's live server (its tests commit: transactional database access), and the pipeline
runs in a real `celery worker` process (tests/worker.py), one for the browser tests, on this run's
Redis prefix and the same test database; the live server enqueues through Redis as production
does, and the result page follows the stages live while the worker works.

Screenshots of each page at desktop and phone widths go to `test-output/browser/` (gitignored),
for a person to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.redis_namespace import delete_run_keys
from tests.worker import WorkerProcess, tasks_through_redis, worker_environment

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            # End-to-end through a real browser: left out of the fast `-m "not e2e"` run.
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module (a launch costs about half a second)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` to run the browser tests")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # Playwright's sync API keeps an event loop running in this thread, and Django refuses
        # ORM calls from such a thread; the tests' own ORM calls are synchronous anyway. Only
        # while a module of browser tests runs: `check --deploy` elsewhere refuses the variable.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="package")
def worker(
    django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """One worker process for the browser tests, stopped when they end (so that the end-to-end
    tests' own workers are alone on the run's queue)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` to run the browser tests")
    delete_run_keys()  # tasks another test left in this run's queue
    process = WorkerProcess(
        worker_environment(), tmp_path_factory.mktemp("browser") / "worker.log", name="browser"
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def site(live_server: Any, catalogue: Any, worker: WorkerProcess) -> Iterator[str]:
    """The live server's URL, with the shipped catalogue loaded (the samples match it); its
    diagnoses go through Redis to the worker."""
    with tasks_through_redis():
        yield str(live_server.url)


@pytest.fixture
def page(browser: Any, site: str) -> Iterator[Any]:
    context = browser.new_context(base_url=site, viewport=DESKTOP)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


# The elements that stick out of the screen on the right, to say what to fix.
WIDER_THAN_SCREEN = """[...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .slice(0, 5).map(e => e.tagName + (e.id ? "#" + e.id : "") + "." + e.className)"""


def screenshot(page: Any, name: str) -> None:
    """The page at desktop and phone widths, full length, under test-output/browser/."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^a-z0-9-]+", "-", name.lower())
    size = page.viewport_size
    for label, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(viewport)
        page.screenshot(path=str(OUTPUT / f"{safe}-{label}.png"), full_page=True)
        if label == "phone":
            # Usable at 390 px: nothing wider than the screen makes the page scroll sideways.
            width = page.evaluate("document.documentElement.scrollWidth")
            wide = page.evaluate(WIDER_THAN_SCREEN) if width > viewport["width"] else []
            assert width <= viewport["width"], f"{name} is {width} px wide on a phone: {wide}"
    page.set_viewport_size(size)


def assert_accessible(page: Any) -> None:
    """axe-core (bundled by axe-playwright-python) finds no violation on the page."""
    # axe-playwright-python ships no type information.
    from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]

    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


# The first diagnosis of a run waits for the worker to load the masker and the engine.
RESULT_TIMEOUT = 90_000


def wait_for_sample(page: Any, text: str) -> None:
    """The log box once a sample link has filled it with a log holding `text`. Playwright's own
    polling (`expect`), not `wait_for_function`: a string predicate polled inside the page is an
    eval, which the pages' Content-Security-Policy (no 'unsafe-eval') refuses, a page error, when
    the first check comes before the sample has arrived."""
    from playwright.sync_api import expect

    box = page.locator("#id_log_text")
    expect(box).to_have_value(re.compile(re.escape(text)), timeout=15_000)


def wait_for_result(page: Any) -> None:
    """The result page, once the worker is done: the page reloads itself then."""
    page.locator("#failure").wait_for(timeout=RESULT_TIMEOUT)
