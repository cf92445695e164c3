"""The wlroots backend: sway, Hyprland, river... through their own Wayland protocols.

Capture is wlr-screencopy, input a wlr virtual pointer and a virtual keyboard
with a keymap of our own (any Unicode character types); no root, no /dev/uinput,
no portal and no consent dialog (see `holodesk.platform.wlroots`). Chosen by
default on a Wayland session whose compositor offers those protocols
(`holodesk.platform.select`).

Geometry: each output is its logical rectangle times its own scale, fractional
scales included, in physical pixels; a click aims at the centre of the physical
pixel named (`holodesk.platform.wlroots.outputs`).
"""

from __future__ import annotations

from collections.abc import Mapping

from holodesk.platform.base import Backend
from holodesk.platform.wlroots.connection import WlrConnection
from holodesk.platform.wlroots.input import WlrInput
from holodesk.platform.wlroots.screen import DEFAULT_FRAME_TIMEOUT_S, WlrScreen


def create(
    socket: str | None = None,
    *,
    frame_timeout_s: float = DEFAULT_FRAME_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> Backend:
    """Connect to the compositor at `socket` (default $WAYLAND_DISPLAY: a socket name
    under $XDG_RUNTIME_DIR, or a path). `frame_timeout_s`: how long a capture may wait
    for the compositor's frame."""
    connection = WlrConnection.open(socket, environ)
    try:
        driver = WlrInput(connection)
    except BaseException:
        connection.close()
        raise
    return Backend(
        name="wlroots",
        os="linux",
        screen=WlrScreen(connection, frame_timeout_s=frame_timeout_s, on_close=connection.close),
        input=driver,
        # Wayland lets no client read the pointer: positions are our own moves.
        observes_user_pointer=False,
        blank_capture_fix=(
            "wake the outputs (swaymsg 'output * power on' / 'output * dpms on') and unlock "
            "the session: a locked or powered-off output is captured black"
        ),
    )
