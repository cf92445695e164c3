"""XvfbEnvironment: a private X display with an optional app, fresh for every rollout."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from holodesk.client.rollouts.environments.base import Managed, numbered
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from holodesk.platform.virtual_display import VirtualDisplay


class AppWindowError(RuntimeError):
    """The app started for a rollout showed no window in time."""


# Starts the app on the display it is given; leaving the context stops it.
AppFactory = Callable[[str], AbstractContextManager[Any]]


class XvfbEnvironment(Managed):
    """A private X display; `app(display)` (optional) is entered anew on every reset,
    after the previous one was left, so each rollout starts from the app's first screen.
    `app_state` is what the app's context manager gave, for reward functions.

    reset() returns once the app shows a window, within `app_window_s` (None: at once,
    for an app that shows none): a first step on an empty screen would be a failure
    of the environment counted against the policy. A window without the window
    manager's say (override-redirect) counts only when it covers the screen, as a
    kiosk app's does: a splash screen is not the app yet."""

    def __init__(
        self,
        app: AppFactory | None = None,
        *,
        width: int = 1280,
        height: int = 800,
        app_window_s: float | None = 30.0,
        name: str = "",
    ) -> None:
        self.name = name or numbered("xvfb")
        self._app = app
        self.app_window_s = app_window_s
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
            window_s = self.app_window_s
            if window_s is not None and not self._xvfb.wait_for_window(window_s):
                raise AppWindowError(f"{self.name}: the app showed no window within {window_s:g} s")
        return open_backend("x11", display=self.display)

    def _stop_app(self) -> None:
        self.app_state = None
        self._running_app.close()

    def close(self) -> None:
        try:
            self._stop_app()
        finally:
            self._xvfb.stop()
