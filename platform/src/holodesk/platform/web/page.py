"""One page of the shared browser: its own context, viewport and DevTools session.

Methods are called from any thread; each hands its work to the browser's loop
(see `browser.py`). Only the loop touches Playwright objects, and the state here
(which tab is active, the DevTools session) only changes on that loop.

A page that opens another (target=_blank, window.open) hands over to it, as a
browser brings a new tab to the front: screenshots, input and URL follow the
newest tab, and when it closes the previous one is shown again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from playwright.async_api import Browser, BrowserContext, CDPSession, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from holodesk.platform.base import DisplayInfo, Region
from holodesk.platform.errors import CaptureError, InputError, NavigationError, PlatformError

# After DOMContentLoaded, how long a navigation waits for the load event (images,
# frames). Pages whose load never ends (endless trackers) must not fail the action.
LOAD_GRACE_S = 5.0
# Wheel events reach a page's main thread asynchronously, aligned to frames and
# merged with the next when they queue up; two frames later one has been handled.
_TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
# A page too busy to render within this long is not waited for.
SETTLE_LIMIT_S = 1.0
MAX_CSS_SIZE = 16384

T = TypeVar("T")


class PageHost(Protocol):
    """What a page needs of its browser (`browser.WebBrowser`): the loop its work runs
    on, the default wait, and to be let go when it closes."""

    timeout_s: float

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T: ...

    def forget(self, page: WebPage) -> None: ...


def playwright_message(error: BaseException) -> str:
    """Playwright appends a multi-line call log to its messages; keep the message."""
    text = str(error).split("\nCall log:", 1)[0].strip()
    return text or type(error).__name__


def physical_size(width: int, height: int, device_scale_factor: float) -> tuple[int, int]:
    """The viewport in physical pixels; refuses sizes the scale maps to fractional pixels."""
    if not (0 < width <= MAX_CSS_SIZE and 0 < height <= MAX_CSS_SIZE):
        raise ValueError(
            f"the viewport must be 1..{MAX_CSS_SIZE} CSS px each way: {width}x{height}"
        )
    if not (math.isfinite(device_scale_factor) and 0.25 <= device_scale_factor <= 8):
        raise ValueError(f"device_scale_factor must be 0.25..8, got {device_scale_factor}")
    exact = (width * device_scale_factor, height * device_scale_factor)
    if any(abs(v - round(v)) > 1e-9 for v in exact):
        # Chromium would round the screenshot one way and hit-test another.
        raise ValueError(
            f"a {width}x{height} viewport at scale {device_scale_factor:g} is "
            f"{exact[0]:g}x{exact[1]:g} physical pixels: choose a size that the scale "
            "maps to whole pixels"
        )
    return round(exact[0]), round(exact[1])


class WebPage:
    """A browser context showing one page (plus any tabs it opens)."""

    def __init__(
        self,
        browser: PageHost,
        display_id: str,
        context: BrowserContext,
        page: Page,
        *,
        width: int,
        height: int,
        device_scale_factor: float,
    ) -> None:
        self.display_id = display_id
        self.css_size = (width, height)
        self.device_scale_factor = device_scale_factor
        physical = physical_size(width, height, device_scale_factor)
        self.display = DisplayInfo(
            display_id,
            Region(0, 0, *physical),
            scale_factor=device_scale_factor,
            primary=True,
            name=f"chromium page {width}x{height} CSS px",
        )
        self._browser = browser
        self._context = context
        self._tabs: list[Page] = []
        self._cdp: CDPSession | None = None
        self._closed = False
        self._adopt(page)
        context.on("page", self._adopt)

    @classmethod
    async def open(
        cls,
        browser: PageHost,
        handle: Browser,
        display_id: str,
        *,
        width: int,
        height: int,
        device_scale_factor: float,
        url: str | None,
        navigation_timeout_s: float,
    ) -> WebPage:
        physical_size(width, height, device_scale_factor)  # refuse before launching anything
        context = await handle.new_context(
            viewport={"width": width, "height": height}, device_scale_factor=device_scale_factor
        )
        try:
            instance = cls(
                browser,
                display_id,
                context,
                await context.new_page(),
                width=width,
                height=height,
                device_scale_factor=device_scale_factor,
            )
            if url:
                try:
                    await instance._navigate(url, navigation_timeout_s)
                except PlaywrightError as error:
                    message = playwright_message(error)
                    raise NavigationError(f"loading {url!r} failed: {message}") from error
        except BaseException:
            await context.close()
            raise
        return instance

    # -- tabs (loop only) --------------------------------------------------------------
    @property
    def _active(self) -> Page:
        if not self._tabs:
            raise PlatformError(f"every tab of {self.display_id} is closed")
        return self._tabs[-1]

    def _adopt(self, page: Page) -> None:
        if page in self._tabs:
            return
        self._tabs.append(page)
        self._cdp = None
        page.on("close", self._on_tab_closed)

    def _on_tab_closed(self, page: Page) -> None:
        if page in self._tabs:
            was_active = page is self._tabs[-1]
            self._tabs.remove(page)
            if was_active:
                self._cdp = None

    async def _session(self) -> CDPSession:
        if self._cdp is None:
            self._cdp = await self._context.new_cdp_session(self._active)
        return self._cdp

    # -- operations (loop only) ----------------------------------------------------------
    async def _dispatch(self, method: str, params: dict[str, Any]) -> None:
        session = await self._session()
        await session.send(method, params)

    async def _settle(self) -> None:
        with contextlib.suppress(TimeoutError, PlaywrightError):
            await asyncio.wait_for(self._active.evaluate(_TWO_FRAMES), SETTLE_LIMIT_S)

    async def _screenshot(self, timeout_s: float) -> bytes:
        # caret="initial": hiding the caret would inject a style into the page.
        return await self._active.screenshot(
            type="png",
            caret="initial",
            animations="allow",
            scale="device",
            timeout=timeout_s * 1000,
        )

    async def _navigate(self, url: str, timeout_s: float) -> None:
        page = self._active
        await page.goto(url, wait_until="domcontentloaded", timeout=timeout_s * 1000)
        # Usable already; the rest (trackers, slow images) may never finish.
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state("load", timeout=min(LOAD_GRACE_S, timeout_s) * 1000)

    async def _url(self) -> str:
        return self._active.url

    async def _evaluate(self, expression: str, arg: Any) -> Any:
        return await self._active.evaluate(expression, arg)

    async def _close(self) -> None:
        await self._context.close()

    # -- the thread-safe face -------------------------------------------------------------
    def _call(
        self,
        coroutine: Coroutine[Any, Any, T],
        error: type[PlatformError],
        what: str,
        timeout_s: float | None = None,
    ) -> T:
        if self._closed:
            coroutine.close()
            raise error(f"{what} on {self.display_id}: the page is closed")
        try:
            return self._browser.run(coroutine, timeout_s)
        except (PlaywrightError, TimeoutError) as failure:
            raise error(f"{what} on {self.display_id} failed: {playwright_message(failure)}") from (
                failure
            )

    def dispatch_mouse(self, params: dict[str, Any]) -> None:
        """Input.dispatchMouseEvent; returns once the page has handled the event."""
        self._call(self._dispatch("Input.dispatchMouseEvent", params), InputError, "a mouse event")

    def dispatch_key(self, params: dict[str, Any]) -> None:
        """Input.dispatchKeyEvent; returns once the page has handled the event."""
        self._call(self._dispatch("Input.dispatchKeyEvent", params), InputError, "a key event")

    def insert_text(self, text: str) -> None:
        """Input.insertText: text as an IME commits it, any Unicode, no key events."""
        self._call(self._dispatch("Input.insertText", {"text": text}), InputError, "typing")

    def settle(self) -> None:
        """Wait until the page has rendered two frames (at most SETTLE_LIMIT_S)."""
        self._call(self._settle(), InputError, "waiting for a frame")

    def screenshot(self) -> bytes:
        """A PNG of the viewport, one pixel per physical pixel."""
        timeout = self._browser.timeout_s
        return self._call(self._screenshot(timeout), CaptureError, "a screenshot", timeout + 5)

    def navigate(self, url: str, timeout_s: float) -> None:
        self._call(
            self._navigate(url, timeout_s), NavigationError, f"loading {url!r}", timeout_s + 5
        )

    def url(self) -> str:
        return self._call(self._url(), PlatformError, "reading the URL")

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Run JavaScript in the page shown now (for tests and diagnostics)."""
        return self._call(self._evaluate(expression, arg), PlatformError, "evaluating script")

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._call(self._close(), PlatformError, "closing the page")
        except PlatformError:
            pass  # the browser is already gone, and the page with it
        finally:
            self._closed = True
            self._browser.forget(self)
