"""Linux evdev button codes (linux/input-event-codes.h), for the portal and uinput routes.

Written out so the portal route needs no evdev; tests check them against evdev.ecodes.
"""

from __future__ import annotations

from holodesk.platform.base import MouseButton
from holodesk.platform.errors import InputError

BTN_LEFT = 0x110
BTN_RIGHT = 0x111
BTN_MIDDLE = 0x112
BTN_SIDE = 0x113  # the "back" thumb button
BTN_EXTRA = 0x114  # the "forward" thumb button


EVDEV_BUTTONS: dict[MouseButton, int] = {
    MouseButton.LEFT: BTN_LEFT,
    MouseButton.RIGHT: BTN_RIGHT,
    MouseButton.MIDDLE: BTN_MIDDLE,
    MouseButton.BACK: BTN_SIDE,
    MouseButton.FORWARD: BTN_EXTRA,
}


def evdev_button(button: MouseButton) -> int:
    """The evdev code of a button; InputError for one this table lacks."""
    try:
        return EVDEV_BUTTONS[button]
    except KeyError:
        raise InputError(f"no evdev button code for {button}") from None
