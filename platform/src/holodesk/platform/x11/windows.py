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
    """Until an app's window is viewable on `display`; False if none is within
    `timeout_s`. An app's window is a top-level window the window manager may manage
    (or its frame), or an override-redirect one covering the whole screen: a kiosk
    app draws itself over everything with no manager's say. Smaller override-redirect
    windows (splash screens, tooltips, menus) are not the app yet."""
    deadline = time.monotonic() + timeout_s
    connection = open_display(display)
    try:
        root = connection.screen().root
        screen = root.get_geometry()
        while True:
            if any(_shown(window, screen) for window in root.query_tree().children):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
    finally:
        connection.close()


def _shown(window: Any, screen: Any) -> bool:
    try:
        attributes = window.get_attributes()
        if attributes.map_state != X.IsViewable:
            return False
        if not attributes.override_redirect:
            return True
        return _covers(window.get_geometry(), screen)
    except (xerror.BadWindow, xerror.BadDrawable):
        return False  # gone between the listing and the question


def _covers(geometry: Any, screen: Any) -> bool:
    return bool(
        geometry.x <= 0
        and geometry.y <= 0
        and geometry.x + geometry.width >= screen.width
        and geometry.y + geometry.height >= screen.height
    )
