"""The INPUT records SendInput receives for each primitive action (pure, no OS calls)."""

from __future__ import annotations

import enum

from holodesk.platform.base import MouseButton, Region
from holodesk.platform.text import utf16_units
from holodesk.platform.windows import structs as s
from holodesk.platform.windows.coords import to_normalized
from holodesk.platform.windows.vkeys import is_extended

# Every absolute move: normalized over the whole virtual desktop, and never merged
# with the next one, so each point of a drag path reaches the application.
MOVE_FLAGS = (
    s.MOUSEEVENTF_MOVE
    | s.MOUSEEVENTF_ABSOLUTE
    | s.MOUSEEVENTF_VIRTUALDESK
    | s.MOUSEEVENTF_MOVE_NOCOALESCE
)


class WinButton(enum.Enum):
    """Windows' mouse buttons: left, right, middle and the two side (X) buttons."""

    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"
    X1 = "x1"  # "back"
    X2 = "x2"  # "forward"


# button -> (down flag, up flag, mouseData)
_BUTTONS: dict[WinButton, tuple[int, int, int]] = {
    WinButton.LEFT: (s.MOUSEEVENTF_LEFTDOWN, s.MOUSEEVENTF_LEFTUP, 0),
    WinButton.RIGHT: (s.MOUSEEVENTF_RIGHTDOWN, s.MOUSEEVENTF_RIGHTUP, 0),
    WinButton.MIDDLE: (s.MOUSEEVENTF_MIDDLEDOWN, s.MOUSEEVENTF_MIDDLEUP, 0),
    WinButton.X1: (s.MOUSEEVENTF_XDOWN, s.MOUSEEVENTF_XUP, s.XBUTTON1),
    WinButton.X2: (s.MOUSEEVENTF_XDOWN, s.MOUSEEVENTF_XUP, s.XBUTTON2),
}

CONTRACT_BUTTONS: dict[MouseButton, WinButton] = {
    MouseButton.LEFT: WinButton.LEFT,
    MouseButton.RIGHT: WinButton.RIGHT,
    MouseButton.MIDDLE: WinButton.MIDDLE,
    MouseButton.BACK: WinButton.X1,
    MouseButton.FORWARD: WinButton.X2,
}


def move(x: int, y: int, virtual_screen: Region) -> s.INPUT:
    """An absolute move to physical pixel (x, y) of the virtual desktop."""
    return s.mouse_input(
        dx=to_normalized(x, virtual_screen.x, virtual_screen.width),
        dy=to_normalized(y, virtual_screen.y, virtual_screen.height),
        flags=MOVE_FLAGS,
    )


def button(which: WinButton, down: bool) -> s.INPUT:
    down_flag, up_flag, data = _BUTTONS[which]
    return s.mouse_input(data=data, flags=down_flag if down else up_flag)


def wheel(dx: int, dy: int) -> list[s.INPUT]:
    """One event per notch, vertical first; dy > 0 scrolls down and dx > 0 right.

    Windows' vertical delta is positive away from the user (up), so dy is negated;
    its horizontal delta is positive to the right, like dx.
    """
    events = [
        s.mouse_input(data=-_sign(dy) * s.WHEEL_DELTA, flags=s.MOUSEEVENTF_WHEEL)
        for _ in range(abs(dy))
    ]
    events += [
        s.mouse_input(data=_sign(dx) * s.WHEEL_DELTA, flags=s.MOUSEEVENTF_HWHEEL)
        for _ in range(abs(dx))
    ]
    return events


def key(vk: int, scan: int, down: bool, name: str = "") -> s.INPUT:
    """A virtual-key event (for the named key `name`, if any); extended keys carry
    KEYEVENTF_EXTENDEDKEY."""
    flags = s.KEYEVENTF_EXTENDEDKEY if is_extended(vk, name) else 0
    if not down:
        flags |= s.KEYEVENTF_KEYUP
    return s.keyboard_input(vk=vk, scan=scan, flags=flags)


def unicode_key(text: str, down: bool) -> list[s.INPUT]:
    """Unicode key events for `text` (one character): a surrogate pair is two units."""
    flags = s.KEYEVENTF_UNICODE | (0 if down else s.KEYEVENTF_KEYUP)
    return [s.keyboard_input(scan=unit, flags=flags) for unit in utf16_units(text)]


def unicode_text(text: str) -> list[s.INPUT]:
    """Types `text`: each UTF-16 unit pressed and released in turn.

    Windows turns each unit into a WM_CHAR; a surrogate pair arrives as two WM_CHARs,
    high then low, which applications join into one character.
    """
    events: list[s.INPUT] = []
    for unit in utf16_units(text):
        events.append(s.keyboard_input(scan=unit, flags=s.KEYEVENTF_UNICODE))
        events.append(s.keyboard_input(scan=unit, flags=s.KEYEVENTF_UNICODE | s.KEYEVENTF_KEYUP))
    return events


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)
