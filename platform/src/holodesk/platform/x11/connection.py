"""Open python-xlib connections that do not share extension state.

python-xlib keeps the event-class table of every connection in ONE class attribute
(`Xlib.protocol.display.Display.event_classes`), and each connection's extensions
write their event codes into it. Two X servers with different extension layouts in
one process (several Xvfb desktops for rollouts, an Xvnc and an Xvfb, or pynput's
own connection beside ours) then corrupt each other: opening the second one fails
with "TypeError: 'type' object does not support item assignment". Every connection
opened here gets private tables, and leaves the shared ones pristine.

An X server that resets when its last client disconnects (a plain `Xvfb :N`, Xorg
without -noreset) kills a connection it accepted just before resetting: python-xlib
sees the setup closed without a reply ("Connection reset by peer"). A connection
that arrives after the reset is served, so such a setup is tried again; a refusal
(authorization, the client limit) is a reply, a DisplayConnectionError, and is not.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.protocol import display as protocol_display
from Xlib.protocol import event as protocol_event

_OPEN_LOCK = threading.Lock()
# The pristine error table, captured before any connection could extend it.
_PRISTINE_ERRORS: dict[int, Any] = dict(protocol_display.Display.error_classes)


# How long to keep trying a setup that a resetting server dropped; a reset takes
# milliseconds, and a server that drops every setup for this long is gone.
RESET_GRACE_S = 2.0
_RESET_PAUSE_S = 0.02


def open_display(name: str | None) -> Any:
    """An `Xlib.display.Display` whose event and error tables are its own.

    A setup that the server dropped (it was resetting) is tried again for a while.
    """
    deadline = time.monotonic() + RESET_GRACE_S
    while True:
        try:
            return _open_private(name)
        except xerror.ConnectionClosedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_RESET_PAUSE_S)


def _open_private(name: str | None) -> Any:
    shared = protocol_display.Display
    with _OPEN_LOCK:
        shared.event_classes = protocol_event.event_class.copy()
        shared.error_classes = dict(_PRISTINE_ERRORS)
        try:
            connection = xdisplay.Display(name)
        finally:
            events, errors = shared.event_classes, shared.error_classes
            shared.event_classes = protocol_event.event_class.copy()
            shared.error_classes = dict(_PRISTINE_ERRORS)
        connection.display.event_classes = events
        connection.display.error_classes = errors
        return connection
