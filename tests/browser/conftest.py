"""Real-browser fixtures: Playwright (sync API) driving Debian's /usr/bin/chromium.

Run in their own pytest process (``make test-browser``): Playwright's sync API keeps an
event loop in the main thread, which breaks async tests sharing the process (stack.md §6).
Without Chromium the tests skip, unless CTXLAB_REQUIRE_BROWSER=1 (set by .ci/run) makes a
missing browser a failure. Screenshots go to artifacts/ (git-ignored).

Waiting: one rule for every browser test. Each page waits up to ``WAIT_MS`` for an element,
a URL, a function or a navigation (``set_page_timeouts``): tests wait for what they need
(``wait_for_selector``, ``wait_for_function``...) with no timeout of their own and never
sleep for a time. The limit is tests/waiting.py's ``WAIT_SECONDS``: generous, because a
loaded 2-core CI machine runs the server, its worker and Chromium at once; it only costs
time when the awaited element never comes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings
from waiting import WAIT_SECONDS

CHROMIUM = Path(os.environ.get("CTXLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(settings.BASE_DIR) / "artifacts"
WAIT_MS = int(WAIT_SECONDS * 1000)


def set_page_timeouts(page: Any) -> Any:
    """The shared wait limit on a page (every page a test opens, ``page`` fixture or not)."""
    page.set_default_timeout(WAIT_MS)
    page.set_default_navigation_timeout(WAIT_MS)
    return page


def wait_for_polls(page: Any, url_part: str, count: int = 2) -> None:
    """Wait until ``count`` more htmx polls to a URL containing ``url_part`` were answered
    and swapped in (instead of sleeping for as long as a few polls should take)."""
    for _ in range(count):
        with page.expect_response(lambda response: url_part in response.url):
            pass
    # A locator, not wait_for_function: the pages' CSP (script-src 'self') refuses the
    # eval that a predicate string needs.
    page.locator(".htmx-request, .htmx-swapping, .htmx-settling").first.wait_for(state="detached")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


def _require_browser() -> None:
    if CHROMIUM.exists():
        return
    reason = f"Chromium not found at {CHROMIUM} (apt-get install chromium chromium-driver)"
    if os.environ.get("CTXLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CTXLAB_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context per test; console errors are collected on page.errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = set_page_timeouts(context.new_page())
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: page.errors.append(msg.text) if msg.type == "error" else None,
    )
    yield page
    context.close()


@pytest.fixture
def screenshot(page: Any, request: pytest.FixtureRequest) -> Any:
    """``screenshot("name")`` saves artifacts/<test>-<name>.png and returns its path."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def _serve_with_worker() -> None:
    """Runs in the server process before it serves: test DB + a real embedded worker."""
    from channels.testing.live import set_database_connection

    from ctxlab.celery import app
    from ctxlab.serving.embedded import start_embedded_worker

    set_database_connection()
    app.conf.task_always_eager = False  # the parent's eager test default must not leak in
    start_embedded_worker()


def _daphne(setup: Any) -> Iterator[SimpleNamespace]:
    """Daphne serving ctxlab.asgi in a forked process: HTTP *and* websockets.

    pytest-django's ``live_server`` is WSGI (no websockets). This mirrors channels'
    ChannelsLiveServerTestCase. The forked child shares the file test database; ``setup``
    runs in it before it serves.
    """
    import asgiref.sync
    from channels.testing.live import make_application
    from daphne.testing import DaphneProcess
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    # A thread-sensitive executor started before the fork would never run in the child,
    # hanging database_sync_to_async in consumers (stack.md §6).
    asgiref.sync.SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
    process = DaphneProcess(
        "localhost",
        partial(make_application, static_wrapper=ASGIStaticFilesHandler),
        setup=setup,
    )
    process.start()
    deadline = time.monotonic() + WAIT_SECONDS
    while not process.ready.wait(timeout=1):
        if not process.is_alive():
            raise RuntimeError("Daphne test server exited before it was ready")
        if time.monotonic() > deadline:
            process.terminate()
            raise RuntimeError(f"Daphne test server not ready after {WAIT_SECONDS:.0f} s")
    port = process.port.value
    try:
        yield SimpleNamespace(url=f"http://localhost:{port}", ws_url=f"ws://localhost:{port}")
    finally:
        process.terminate()
        process.join()


@pytest.fixture
def asgi_live_server(transactional_db: None) -> Iterator[SimpleNamespace]:
    """The ASGI server; tasks run as configured in the parent at fork time (eager)."""
    from channels.testing.live import set_database_connection

    yield from _daphne(set_database_connection)


@pytest.fixture
def asgi_worker_server(transactional_db: None) -> Iterator[SimpleNamespace]:
    """The ASGI server with a real embedded Celery worker inside, as ``make run`` serves:
    tasks and progress messages flow through the memory broker and channel layer."""
    yield from _daphne(_serve_with_worker)


@pytest.fixture
def login(page: Any, django_user_model: Any, request: pytest.FixtureRequest) -> Any:
    """``login(base_url=None)`` creates a user and signs in through the real login form.

    ``base_url`` defaults to pytest-django's ``live_server``; pass ``asgi_live_server.url``
    for pages that need websockets.
    """

    def sign_in(
        username: str = "alice", password: str = "alice-pass-123", *, base_url: str | None = None
    ) -> Any:
        if base_url is None:
            base_url = request.getfixturevalue("live_server").url
        if not django_user_model.objects.filter(username=username).exists():
            django_user_model.objects.create_user(username=username, password=password)
        page.goto(f"{base_url}/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_selector("nav.site-nav")
        return page

    return sign_in
