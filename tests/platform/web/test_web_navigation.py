"""Navigation: the backend's Navigator, URL normalisation, tabs opened by the page."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from holodesk.platform.base import Navigator
from holodesk.platform.errors import NavigationError
from holodesk.platform.select import open_backend
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.browser import WebBrowser
from holodesk.platform.web.navigator import normalize_url
from tests.platform.web.support import events, wait_for


@pytest.mark.parametrize(
    ("given", "loaded"),
    [
        ("https://example.org/a?b=c#d", "https://example.org/a?b=c#d"),
        ("  http://example.org  ", "http://example.org"),
        ("example.org/path", "https://example.org/path"),
        ("localhost:8000/x", "http://localhost:8000/x"),
        ("127.0.0.1:9/x", "http://127.0.0.1:9/x"),
        ("192.168.1.5", "http://192.168.1.5"),
        ("[::1]:8080/", "http://[::1]:8080/"),
        ("user@10.0.0.1/x", "http://user@10.0.0.1/x"),
        ("about:blank", "about:blank"),
        ("data:text/html,<p>x</p>", "data:text/html,<p>x</p>"),
        ("file:///tmp/x.html", "file:///tmp/x.html"),
    ],
)
def test_normalize_url_adds_the_scheme_an_address_bar_would(given: str, loaded: str) -> None:
    assert normalize_url(given) == loaded


@pytest.mark.parametrize(
    ("given", "message"),
    [("", "empty"), ("   ", "empty"), ("a b.com", "whitespace"), ("javascript:alert(1)", "java")],
)
def test_normalize_url_refuses_what_is_no_url(given: str, message: str) -> None:
    with pytest.raises(NavigationError, match=message):
        normalize_url(given)


@pytest.mark.web
def test_navigate_loads_the_page_and_reports_its_url(web: WebBackend, site: str) -> None:
    navigator = web.navigator
    assert isinstance(navigator, Navigator)
    assert navigator.current_url() == f"{site}/events.html"

    navigator.navigate(f"{site}/second.html")
    assert navigator.current_url() == f"{site}/second.html"
    assert web.page.evaluate("document.getElementById('second').textContent") == "second page"
    # Back, as a desktop browser's Alt+Left (headless Chromium keeps its accelerators).
    web.input.key_chord(["alt", "left"])
    wait_for(lambda: navigator.current_url() == f"{site}/events.html", "going back")


@pytest.mark.web
def test_navigation_to_a_closed_port_fails_with_the_cause(web: WebBackend) -> None:
    assert web.navigator is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens there now.
    with pytest.raises(NavigationError, match="ERR_CONNECTION_REFUSED"):
        web.navigator.navigate(f"http://127.0.0.1:{port}/")


@pytest.mark.web
def test_a_start_url_that_does_not_load_fails_and_leaves_no_page(browser: WebBrowser) -> None:
    pages = len(browser.pages())
    with pytest.raises(NavigationError, match="ERR_NAME_NOT_RESOLVED"):
        open_backend("web", browser=browser, url="no-such-host.invalid")
    assert len(browser.pages()) == pages


@pytest.mark.web
def test_a_tab_the_page_opens_comes_to_the_front(
    open_page: Callable[..., WebBackend], site: str
) -> None:
    web = open_page("popup.html")
    assert web.navigator is not None
    web.input.click(100, 40)  # the target=_blank link
    wait_for(lambda: web.navigator and web.navigator.current_url() == f"{site}/second.html",
             "the new tab")  # fmt: skip
    image = web.screen.grab(web.screen.displays()[0].bounds)
    assert image.size == (1280, 800)
    # Input goes to the new tab; when it closes, the opener is in front again.
    web.input.click(640, 400)
    assert [e["page"] for e in events(web, "mousedown")] == ["/second.html"]
    web.page.evaluate("window.close()")
    wait_for(lambda: web.navigator and web.navigator.current_url() == f"{site}/popup.html",
             "the opener again")  # fmt: skip
    web.input.click(640, 400)
    assert [e["page"] for e in events(web, "mousedown")][-1] == "/popup.html"
