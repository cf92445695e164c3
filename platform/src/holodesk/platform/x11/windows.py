"""Whether an X display shows a window yet: what an environment waits for after it
starts an app, so a session's first step sees the app and not an empty screen (and
its first keys do not go to a desktop with no window)."""

from __future__ import annotations

import time
from typing import Any

from Xlib import X
from Xlib import error as xerror

from holodesk.platform.x11.connection import open_display

_POLL_S = 0.02


def wait_for_window(display: str, timeout_s: float) -> bool:
    """Until a top-level window is viewable on `display` (an app's own, or a window
    manager's frame around one; override-redirect ones, tooltips and menus, do not
    count); False if none is within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    connection = open_display(display)
    try:
        root = connection.screen().root
        while True:
            if any(_shown(window) for window in root.query_tree().children):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
    finally:
        connection.close()


def _shown(window: Any) -> bool:
    try:
        attributes = window.get_attributes()
    except (xerror.BadWindow, xerror.BadDrawable):
        return False  # gone between the listing and the question
    return bool(attributes.map_state == X.IsViewable and not attributes.override_redirect)
