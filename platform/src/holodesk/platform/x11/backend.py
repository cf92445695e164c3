"""The Linux/X11 backend: python-xlib for geometry and XTEST input, mss for capture."""

from __future__ import annotations

import os
from typing import Any

from Xlib import error as xerror

from holodesk.platform import preflight
from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.x11.connection import open_display
from holodesk.platform.x11.input import DEFAULT_LINGER_S, DEFAULT_SETTLE_S, X11Input
from holodesk.platform.x11.screen import X11Screen

_XVFB_HINT = "or start a virtual one: Xvfb :99 -screen 0 1920x1080x24 & export DISPLAY=:99"


def create(
    display: str | None = None,
    settle_s: float = DEFAULT_SETTLE_S,
    linger_s: float = DEFAULT_LINGER_S,
) -> Backend:
    """Connect to `display` (default $DISPLAY); see X11Input for the delays."""
    found = preflight.x11_problems(display, os.environ)
    if found:
        raise BackendUnavailableError(found, backend="x11")
    name = display or os.environ["DISPLAY"]
    screen_connection = connect(name)
    input_connection = connect(name)
    try:
        if not input_connection.has_extension("XTEST"):
            raise BackendUnavailableError(
                [
                    (
                        f"the X server at DISPLAY={name} has no XTEST extension, "
                        "which input injection needs",
                        "enable XTEST: Xorg and Xvfb load it unless told `-extension XTEST` "
                        "or `-extension RECORD` (the X server switches the two together)",
                    )
                ],
                backend="x11",
            )
        # Separate connections: python-xlib is not thread-safe, and the client
        # captures while a safety thread may release keys.
        return Backend(
            name="x11",
            os="linux",
            screen=X11Screen(screen_connection, name),
            input=X11Input(input_connection, settle_s=settle_s, linger_s=linger_s),
        )
    except BaseException:
        screen_connection.close()
        input_connection.close()
        raise


def connect(name: str) -> Any:
    """An Xlib connection, or BackendUnavailableError saying why not."""
    try:
        return open_display(name)
    except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as error:
        raise BackendUnavailableError(
            [
                (
                    f"cannot connect to the X server at DISPLAY={name!r}: {error}",
                    "check that this X server is running and that this user may connect "
                    "(run as the logged-in user, or point XAUTHORITY at its cookie), " + _XVFB_HINT,
                )
            ],
            backend="x11",
        ) from error
