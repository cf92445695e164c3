"""One headless Chromium, shared by many pages, driven from one private thread.

Driver: Playwright's async API, on an asyncio loop in a thread this module owns.

- Playwright rather than raw CDP over a websocket: it launches and tears down
  Chromium robustly (a pipe, not a port to find or leak), isolates sessions in
  browser contexts, emulates viewport and device scale factor, waits for
  navigations properly, follows popups and dismisses dialogs, and is typed. Its
  wheel bundles the driver; the browser is the system's Chromium (Debian's
  package), so `playwright install` is never needed.
- Input goes through a DevTools session Playwright opens on the page (`page.py`),
  not through Playwright's keyboard and mouse: those refuse characters missing
  from their US layout and cannot take click counts from separate presses, and
  raw `Input.dispatch*Event` gives every field (button, buttons, clickCount,
  key, code, keyCode, modifiers) exactly.
- The async API on a private loop rather than the sync API: Playwright's sync
  objects belong to the thread that created them, while the client calls a
  backend from its own worker thread and several sessions (threads) share one
  browser. Here every call from any thread is handed to the loop
  (`run_coroutine_threadsafe`), so one browser serves any number of threads,
  and calls for different pages run concurrently.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import os
import shutil
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from holodesk.platform.errors import BackendUnavailableError, PlatformError
from holodesk.platform.web.page import WebPage, playwright_message

log = logging.getLogger(__name__)

ENV_CHROMIUM = "HOLODESK_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
# Headless, as root, in a closed network: without the background-networking flags
# Chromium keeps dialling Google services and floods the network with refused
# connections. Playwright gives it a fresh temporary --user-data-dir per launch.
LAUNCH_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
DEFAULT_TIMEOUT_S = 30.0
START_TIMEOUT_S = 60.0
_INSTALL_FIX = (
    f"install Chromium (Debian/Ubuntu: apt-get install chromium) or point {ENV_CHROMIUM} "
    "at a Chromium or Chrome executable"
)

T = TypeVar("T")


class BrowserClosedError(PlatformError):
    """The shared browser was closed while a page still used it."""


def find_chromium(explicit: str | None, environ: Mapping[str, str]) -> str:
    """The Chromium to run: `explicit`, else $HOLODESK_CHROMIUM, else one on PATH."""
    chosen = explicit or environ.get(ENV_CHROMIUM, "").strip() or None
    if chosen is not None:
        found = shutil.which(chosen)
        if found is None:
            source = "executable_path" if explicit else ENV_CHROMIUM
            raise BackendUnavailableError(
                [(f"{source}={chosen!r} is not an executable", _INSTALL_FIX)], backend="web"
            )
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    raise BackendUnavailableError(
        [(f"no Chromium found on PATH (looked for {', '.join(CHROMIUM_NAMES)})", _INSTALL_FIX)],
        backend="web",
    )


class WebBrowser:
    """A headless Chromium that hands out pages; thread-safe; close it when done.

    Each page gets its own browser context (cookies, storage, cache), so sessions
    sharing the browser never see each other's state.
    """

    def __init__(
        self,
        executable_path: str | None = None,
        *,
        args: Sequence[str] = (),
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.executable_path = find_chromium(executable_path, os.environ)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._closed = False
        self._pages: list[WebPage] = []
        self._next_number = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="holodesk-web", daemon=True
        )
        self._thread.start()
        try:
            self._playwright, self._browser = self._submit(
                self._start((*LAUNCH_FLAGS, *args)), START_TIMEOUT_S
            )
        except BaseException:
            self._stop_loop()
            raise
        # A browser left open at exit would outlive this process's driver pipe.
        atexit.register(self.close)

    async def _start(self, args: Sequence[str]) -> tuple[Playwright, Browser]:
        playwright = await async_playwright().start()
        try:
            browser = await playwright.chromium.launch(
                executable_path=self.executable_path, headless=True, args=list(args)
            )
        except PlaywrightError as error:
            await playwright.stop()
            raise BackendUnavailableError(
                [
                    (
                        f"starting {self.executable_path} failed: {playwright_message(error)}",
                        "check that this Chromium runs headless here "
                        f"(`{self.executable_path} --headless --no-sandbox --dump-dom "
                        f"about:blank`), or {_INSTALL_FIX}",
                    )
                ],
                backend="web",
            ) from error
        return playwright, browser

    @property
    def version(self) -> str:
        return self._browser.version

    def new_page(
        self,
        url: str | None = None,
        *,
        width: int = 1280,
        height: int = 800,
        device_scale_factor: float = 1.0,
        navigation_timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> WebPage:
        """A new page in a fresh context; it shows `url` if given, else about:blank."""
        with self._lock:
            number = self._next_number
            self._next_number += 1
        page = self.run(
            WebPage.open(
                self,
                self._browser,
                f"web:{number}",
                width=width,
                height=height,
                device_scale_factor=device_scale_factor,
                url=url,
                navigation_timeout_s=navigation_timeout_s,
            ),
            navigation_timeout_s + self.timeout_s,
        )
        with self._lock:
            self._pages.append(page)
        return page

    def forget(self, page: WebPage) -> None:
        """Called by a page once it is closed."""
        with self._lock:
            if page in self._pages:
                self._pages.remove(page)

    def pages(self) -> list[WebPage]:
        with self._lock:
            return list(self._pages)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run a coroutine on the browser's loop and wait for it (TimeoutError after timeout_s)."""
        if self._closed:
            coroutine.close()
            raise BrowserClosedError("the web browser is closed")
        return self._submit(coroutine, timeout_s)

    def _submit(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None) -> T:
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("WebBrowser.run called on its own loop: it would wait forever")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            return future.result(limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the browser did not answer within {limit:g} s") from None

    def close(self) -> None:
        """Close every page and the browser; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pages.clear()
        atexit.unregister(self.close)
        try:
            self._submit(self._shutdown(), self.timeout_s)
        except Exception:
            log.exception("closing the web browser failed")
        finally:
            self._stop_loop()

    async def _shutdown(self) -> None:
        try:
            await self._browser.close()
        finally:
            await self._playwright.stop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout_s)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> WebBrowser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
