"""Environments a rollout runs in: one session at a time each, reset between sessions.

- XvfbEnvironment: a private Xvfb display of its own (its own X server, so
  environments never see each other's windows or input), with an optional app
  restarted fresh for every rollout.
- WebEnvironment: a page of a headless Chromium (shared between environments or
  its own), opened fresh at the task's URL for every rollout.

Anything with `name`, `start()`, `reset(task) -> Backend` and `close()` is an
environment too. Every method blocks (processes, browsers): rollouts call them in
a worker thread. The backend reset() returns belongs to the rollout, which closes it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from holodesk.platform.virtual_display import VirtualDisplay

if TYPE_CHECKING:
    from holodesk.platform.web.browser import WebBrowser

# Starts the app on the display it is given; leaving the context stops it.
AppFactory = Callable[[str], AbstractContextManager[Any]]

_numbers = itertools.count(1)


@runtime_checkable
class Environment(Protocol):
    name: str

    def start(self) -> None:
        """Bring the environment up; a second call does nothing."""

    def reset(self, task: RolloutTask) -> Backend:
        """A fresh state for `task`, and a backend that drives it."""
        ...

    def close(self) -> None: ...


class _Managed:
    """start()/close() as a context manager."""

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class XvfbEnvironment(_Managed):
    """A private X display; `app(display)` (optional) is entered anew on every reset,
    after the previous one was left, so each rollout starts from the app's first screen.
    `app_state` is what the app's context manager gave, for reward functions."""

    def __init__(
        self,
        app: AppFactory | None = None,
        *,
        width: int = 1280,
        height: int = 800,
        name: str = "",
    ) -> None:
        self.name = name or f"xvfb-{next(_numbers)}"
        self._app = app
        self._xvfb = VirtualDisplay(width, height)
        self._running_app = contextlib.ExitStack()
        self.app_state: Any = None

    @property
    def display(self) -> str:
        """The X display name, e.g. ":42" (empty before start())."""
        return self._xvfb.display

    def start(self) -> None:
        if not self._xvfb.display:
            self._xvfb.start()

    def reset(self, task: RolloutTask) -> Backend:
        self.start()
        self._stop_app()
        if self._app is not None:
            self.app_state = self._running_app.enter_context(self._app(self.display))
        return open_backend("x11", display=self.display)

    def _stop_app(self) -> None:
        self.app_state = None
        self._running_app.close()

    def close(self) -> None:
        try:
            self._stop_app()
        finally:
            self._xvfb.stop()


class WebEnvironment(_Managed):
    """A page at the task's URL (else `url`), fresh for every rollout. Given a
    browser, pages are opened in it (many environments, one Chromium); else the
    environment starts its own on start() and stops it on close()."""

    def __init__(
        self,
        url: str | None = None,
        *,
        browser: WebBrowser | None = None,
        width: int = 1280,
        height: int = 800,
        device_scale_factor: float = 1.0,
        name: str = "",
    ) -> None:
        self.name = name or f"web-{next(_numbers)}"
        self.url = url
        self.width = width
        self.height = height
        self.device_scale_factor = device_scale_factor
        self._shared = browser
        self._own: WebBrowser | None = None

    @property
    def browser(self) -> WebBrowser | None:
        return self._shared or self._own

    def start(self) -> None:
        if self.browser is None:
            from holodesk.platform.web.browser import WebBrowser

            self._own = WebBrowser()

    def reset(self, task: RolloutTask) -> Backend:
        self.start()
        url = task.url or self.url
        if url is None:
            raise ValueError(f"{self.name}: the task names no url, and the environment has none")
        return open_backend(
            "web",
            browser=self.browser,
            url=url,
            width=self.width,
            height=self.height,
            device_scale_factor=self.device_scale_factor,
        )

    def close(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            own.close()
