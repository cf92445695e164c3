"""Fixtures for the web backend: a local site, one Chromium per test module, a page per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.platform.select import open_backend
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.browser import WebBrowser
from tests.support.web_site import serve_pages


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the test pages (tests/support/web_site.py)."""
    with serve_pages(Path(tmp_path_factory.mktemp("site"))) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[WebBrowser]:
    with WebBrowser() as shared:
        yield shared


@pytest.fixture
def open_page(browser: WebBrowser, site: str) -> Iterator[Callable[..., WebBackend]]:
    """Opens a backend on a test page ("events.html"), closed after the test."""
    opened: list[WebBackend] = []

    def open_(name: str = "events.html", **options: Any) -> WebBackend:
        backend = open_backend("web", browser=browser, url=f"{site}/{name}", **options)
        assert isinstance(backend, WebBackend)
        opened.append(backend)
        return backend

    yield open_
    for backend in opened:
        backend.close()


@pytest.fixture
def web(open_page: Callable[..., WebBackend]) -> WebBackend:
    """A 1280x800 page at scale 1 showing events.html."""
    return open_page()
