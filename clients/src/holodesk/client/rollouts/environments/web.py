"""WebEnvironment: a headless Chromium page at the task's URL, fresh for every rollout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from holodesk.client.rollouts.environments.base import Managed, numbered
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend

if TYPE_CHECKING:
    from holodesk.platform.web.browser import WebBrowser


class WebEnvironment(Managed):
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
        self.name = name or numbered("web")
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
