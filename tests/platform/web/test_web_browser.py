"""One browser, many pages: isolation, concurrency from threads, lifecycle, choice of backend."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from holodesk.platform.errors import BackendUnavailableError, InputError
from holodesk.platform.select import open_backend
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.browser import BrowserClosedError, WebBrowser, find_chromium
from tests.platform.web.support import events

pytestmark = pytest.mark.web

PAGES = 4


def test_pages_driven_from_threads_at_once_each_get_only_their_own_input(
    browser: WebBrowser, open_page: Callable[..., WebBackend]
) -> None:
    backends = [open_page() for _ in range(PAGES)]
    assert len({b.screen.displays()[0].display_id for b in backends}) == PAGES
    start = threading.Barrier(PAGES)
    failures: list[BaseException] = []

    def drive(number: int, backend: WebBackend) -> None:
        try:
            start.wait()
            backend.input.click(100 + number, 35)  # into #field
            for round_ in range(3):
                backend.input.type_text(f"<{number}:{round_}>")
                backend.input.scroll(600, 500, 0, 1)
            backend.input.click(700 + number * 10, 500, count=2)
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [
        threading.Thread(target=drive, args=(number, backend))
        for number, backend in enumerate(backends)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures

    for number, backend in enumerate(backends):
        value = backend.page.evaluate("document.getElementById('field').value")
        assert value == "".join(f"<{number}:{r}>" for r in range(3))
        downs = events(backend, "mousedown")
        assert [(e["x"], e["detail"]) for e in downs] == [
            (100 + number, 1),
            (700 + number * 10, 1),
            (700 + number * 10, 2),
        ]
        assert len(events(backend, "wheel")) == 3
    assert len(browser.pages()) >= PAGES


def test_pages_do_not_share_storage(open_page: Callable[..., WebBackend]) -> None:
    first, second = open_page(), open_page()
    first.page.evaluate("localStorage.setItem('who', 'first')")
    assert second.page.evaluate("localStorage.getItem('who')") is None


def test_a_backend_owns_its_browser_when_given_none(site: str) -> None:
    backend = open_backend("web", url=f"{site}/events.html", width=320, height=200)
    assert isinstance(backend, WebBackend)
    owned = backend.owned_browser
    assert owned is not None
    assert owned.version
    backend.close()
    with pytest.raises(BrowserClosedError):
        owned.new_page()


def test_a_closed_page_refuses_input(open_page: Callable[..., WebBackend]) -> None:
    backend = open_page()
    backend.page.close()
    with pytest.raises(InputError, match="closed"):
        backend.input.click(10, 10)


def test_missing_chromium_is_explained() -> None:
    with pytest.raises(BackendUnavailableError, match="apt-get install chromium"):
        find_chromium("/nonexistent/chromium", {})
    with pytest.raises(BackendUnavailableError, match="HOLODESK_CHROMIUM"):
        find_chromium(None, {"HOLODESK_CHROMIUM": "no-such-browser"})


def test_the_environment_chooses_the_web_backend(
    monkeypatch: pytest.MonkeyPatch, browser: WebBrowser
) -> None:
    monkeypatch.setenv("HOLODESK_PLATFORM_BACKEND", "web")
    backend = open_backend(browser=browser)
    try:
        assert (backend.name, backend.os) == ("web", "web")
        assert backend.navigator is not None
    finally:
        backend.close()
