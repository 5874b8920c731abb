"""Browser tests: Debian's Chromium driven by Playwright against pytest-django's live server.

One browser for all the browser tests, a fresh context (cookies, storage) per page opened by a test. Every page a
test visits is screenshotted to ``test-output/screenshots/<test>-<page>.png``, and every console error or uncaught
page error (a Content-Security-Policy violation is reported as a console error) is collected so the test can
assert there were none.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import PASSWORD, World, build_world

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="package")
def playwright_driver():
    """Playwright for the browser tests (package scope: it stops before the rest of the suite runs).

    Its sync API keeps an event loop running in this thread, so Django would refuse the ORM calls the tests make
    around it; DJANGO_ALLOW_ASYNC_UNSAFE allows them, only while Playwright runs. It must not stay set: subprocesses
    inherit it, and `manage.py check --deploy` (tests/project/test_deploy.py) rightly fails on it.
    """
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as driver:
            yield driver
    finally:
        if previous is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="package")
def chromium(playwright_driver):
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's Chromium (apt-get install chromium; "
            ".ci/run installs it). Never run `playwright install`.",
            pytrace=False,
        )
    browser = playwright_driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture
def live_world(transactional_db, settings) -> World:
    """The personas, committed so the live server's thread sees them."""
    # Other tests may have failed sign-ins from 127.0.0.1 in the same cache; the limit is not under test here.
    settings.LOGIN_FAILURE_LIMIT = 10_000
    return build_world()


@dataclass(frozen=True)
class ConsoleError:
    page_url: str
    source: str  # the script or resource the message is about; for a failed load, the URL that failed
    text: str

    def __str__(self) -> str:
        return f"on {self.page_url} (from {self.source or 'the page'}): {self.text}"


class Browsing:
    """Pages for one test: opens them in fresh contexts, signs in, screenshots, and collects console errors."""

    def __init__(self, browser, base_url: str, test_name: str):
        self.browser = browser
        self.base_url = base_url
        self.test_name = re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")
        self.errors: list[ConsoleError] = []
        self.expected_failures: set[tuple[str, int]] = set()
        self.contexts = []

    def new_page(self, *, javascript: bool = True):
        context = self.browser.new_context(base_url=self.base_url, java_script_enabled=javascript, viewport=VIEWPORT)
        context.set_default_timeout(5_000)
        self.contexts.append(context)
        page = context.new_page()
        page.on("console", lambda msg: self._console(page, msg))
        page.on("pageerror", lambda exc: self.errors.append(ConsoleError(page.url, "", f"uncaught: {exc}")))
        return page

    def _console(self, page, msg) -> None:
        if msg.type != "error":
            return
        source = (msg.location or {}).get("url", "")
        self.errors.append(ConsoleError(page.url, source, msg.text))

    def shot(self, page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{self.test_name}-{name}.png"
        # caret="initial": hiding the caret leaves style="" on inputs, which htmx then settles onto swapped
        # elements, a style-src-attr violation of our CSP that only the screenshot caused.
        page.screenshot(path=str(path), full_page=True, caret="initial")
        return path

    def sign_in(self, page, username: str, password: str = PASSWORD, *, shot: str | None = None) -> None:
        page.goto("/login/")
        page.get_by_label("Username or email").fill(username)
        page.get_by_label("Password").fill(password)
        if shot:
            self.shot(page, shot)
        page.get_by_role("button", name="Sign in").click()

    def expect_error_status(self, path: str, status: int) -> None:
        """This test loads ``path`` knowing it answers ``status``, which Chromium logs as a failed load."""
        self.expected_failures.add((path, status))

    def _expected(self, error: ConsoleError) -> bool:
        return any(
            urlsplit(error.source)._replace(scheme="", netloc="").geturl() == path
            and f"status of {status} " in error.text
            for path, status in self.expected_failures
        )

    def assert_no_console_errors(self) -> None:
        errors = [e for e in self.errors if not self._expected(e)]
        assert errors == [], "console errors:\n" + "\n".join(map(str, errors))

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def browsing(chromium, live_server, request):
    session = Browsing(chromium, live_server.url, request.node.name)
    yield session
    session.close()
