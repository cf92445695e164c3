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

# Starts the app on the display it is given; leaving the context stops it.
AppFactory = Callable[[str], AbstractContextManager[Any]]


class XvfbEnvironment(Managed):
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
        self.name = name or numbered("xvfb")
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
