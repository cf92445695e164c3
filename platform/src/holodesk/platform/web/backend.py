"""The web backend: one headless Chromium page is the whole target (no desktop).

    backend = open_backend("web", url="https://example.org")            # own browser
    with WebBrowser() as browser:                                         # or shared:
        backends = [open_backend("web", browser=browser) for _ in range(10)]

The display is the viewport in physical pixels (CSS px x device_scale_factor),
capture is a page screenshot, input is DevTools input events, and the backend
has a `navigator`. Every call may come from any thread (see web/browser.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from holodesk.platform import preflight
from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError

if TYPE_CHECKING:
    from holodesk.platform.web.browser import WebBrowser
    from holodesk.platform.web.page import WebPage

DEFAULT_TIMEOUT_S = 30.0


@dataclass(eq=False)
class WebBackend(Backend):
    """A Backend that also gives tests and tools the page itself."""

    page: WebPage = field(kw_only=True)
    # The browser this backend started itself, closed with it; None when shared.
    owned_browser: WebBrowser | None = field(default=None, kw_only=True)

    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                self.page.close()
            finally:
                if self.owned_browser is not None:
                    self.owned_browser.close()


def create(
    url: str | None = None,
    width: int = 1280,
    height: int = 800,
    device_scale_factor: float = 1.0,
    browser: WebBrowser | None = None,
    executable_path: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    navigation_timeout_s: float = DEFAULT_TIMEOUT_S,
) -> WebBackend:
    """A new page of `browser` (else of a browser started for it and closed with it).

    `executable_path` (else $HOLODESK_CHROMIUM, else chromium on PATH) is only used
    when starting a browser; `timeout_s` bounds each call, `navigation_timeout_s`
    each page load.
    """
    if not preflight.installed("playwright"):
        raise BackendUnavailableError(
            [
                (
                    "the web backend needs Playwright, which is not installed",
                    "install the extra: `pip install 'holodesk-platform[web]'` (or `uv sync` "
                    "in the holodesk checkout); never `playwright install`: the system's "
                    "Chromium is used",
                )
            ],
            backend="web",
        )
    # Imported here so that importing this module never needs Playwright.
    from holodesk.platform.web.browser import WebBrowser
    from holodesk.platform.web.input import WebInput
    from holodesk.platform.web.navigator import WebNavigator, normalize_url
    from holodesk.platform.web.screen import WebScreen

    owned = None
    if browser is None:
        owned = browser = WebBrowser(executable_path, timeout_s=timeout_s)
    try:
        page = browser.new_page(
            None if url is None else normalize_url(url),
            width=width,
            height=height,
            device_scale_factor=device_scale_factor,
            navigation_timeout_s=navigation_timeout_s,
        )
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    return WebBackend(
        name="web",
        os="web",
        screen=WebScreen(page),
        input=WebInput(page),
        navigator=WebNavigator(page, navigation_timeout_s),
        observes_user_pointer=False,
        page=page,
        owned_browser=owned,
    )
