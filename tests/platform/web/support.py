"""Reading what a test page logged (see tests/support/web_site.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from holodesk.platform.backends.web import WebBackend

Event = dict[str, Any]


def events(backend: WebBackend, *types: str) -> list[Event]:
    """The page's logged events, optionally only those of the given types."""
    logged: list[Event] = backend.page.evaluate("window.events")
    return [e for e in logged if not types or e["type"] in types]


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 10.0) -> Any:
    """Poll until check() is truthy (for effects the page applies asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
