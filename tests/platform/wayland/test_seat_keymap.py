"""Reading the compositor's keymap: where it cannot be had, and a mutter that has no keyboard.

The keymap read from running desktops is in the portal suites (test_portal_mutter.py,
test_portal_kwin*.py) and test_portal_kwin_layout.py.
"""

from __future__ import annotations

import pytest

from holodesk.platform.errors import InputError
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.portal_keysyms import PortalKeysyms, portal_keysyms
from holodesk.platform.wayland.seat_keymap import KeymapUnknownError, SeatKeymap
from holodesk.platform.wlroots.connection import WlrConnection
from tests.platform.wayland.conftest import start_desktop


def test_without_a_wayland_display_the_keymap_is_unknown() -> None:
    with pytest.raises(KeymapUnknownError, match="WAYLAND_DISPLAY is not set"):
        SeatKeymap.open({})


def test_where_the_keymap_is_unknown_the_portal_assumes_us_and_says_so(bus: str) -> None:
    connection = PortalBus(bus)
    try:
        keysyms = portal_keysyms(connection, {"XDG_CURRENT_DESKTOP": "GNOME"})
    finally:
        connection.close()
    assert isinstance(keysyms, PortalKeysyms)
    assert keysyms.keysyms("ok") == {"o": ord("o"), "k": ord("k")}
    with pytest.raises(InputError) as raised:
        keysyms.keysyms("é")
    message = str(raised.value)
    assert message.startswith(
        "holodesk could not read the keyboard layout of GNOME (mutter) (WAYLAND_DISPLAY is not "
        "set, so there is no compositor to ask), so it assumes the default, English (US)"
    ), message
    assert "run holodesk inside the Wayland session (WAYLAND_DISPLAY set)" in message


@pytest.mark.portal_desktop
def test_a_mutter_without_a_keyboard_is_not_asked_for_one() -> None:
    """mutter 43 dies (SIGSEGV) when a client asks for the keyboard of a seat that has
    none, as a headless one's is until a virtual keyboard exists: the seat's
    capabilities are read first, and mutter lives on."""
    desktop = start_desktop("mutter")
    try:
        with pytest.raises(KeymapUnknownError, match="the compositor's seat has no keyboard yet"):
            SeatKeymap.open(desktop.environ())
        socket = str(desktop.runtime_dir / desktop.wayland_display)
        again = WlrConnection.open(socket, desktop.environ(), needs={"wl_seat": "a seat"})
        again.roundtrip()  # mutter still answers
        again.close()
        compositor = next(p for p in desktop.processes if p.args[0] == "mutter")
        assert compositor.poll() is None
    finally:
        desktop.stop()
