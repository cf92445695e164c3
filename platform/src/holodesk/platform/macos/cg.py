"""CoreGraphics event constants (CGEventTypes.h), written out so pure logic needs no pyobjc."""

from __future__ import annotations

# CGEventType
LEFT_MOUSE_DOWN = 1
LEFT_MOUSE_UP = 2
RIGHT_MOUSE_DOWN = 3
RIGHT_MOUSE_UP = 4
MOUSE_MOVED = 5
LEFT_MOUSE_DRAGGED = 6
RIGHT_MOUSE_DRAGGED = 7
KEY_DOWN = 10
KEY_UP = 11
SCROLL_WHEEL = 22
OTHER_MOUSE_DOWN = 25
OTHER_MOUSE_UP = 26
OTHER_MOUSE_DRAGGED = 27

# CGMouseButton
BUTTON_LEFT = 0
BUTTON_RIGHT = 1
BUTTON_CENTER = 2
# Not named by CGMouseButton, but "other" buttons carry any number 0-31, and 3 and 4
# are the side buttons: what AppKit reports as buttonNumber 3/4, back and forward.
BUTTON_BACK = 3
BUTTON_FORWARD = 4

# CGEventField
MOUSE_EVENT_CLICK_STATE = 1  # kCGMouseEventClickState
MOUSE_EVENT_BUTTON_NUMBER = 3  # kCGMouseEventButtonNumber

# CGScrollEventUnit
SCROLL_UNIT_PIXEL = 0
SCROLL_UNIT_LINE = 1

# CGEventTapLocation: post where hardware events enter, so every app sees them as such.
HID_EVENT_TAP = 0

# CGEventFlags
FLAG_ALPHA_SHIFT = 0x0001_0000  # Caps Lock
FLAG_SHIFT = 0x0002_0000
FLAG_CONTROL = 0x0004_0000
FLAG_ALTERNATE = 0x0008_0000  # Option
FLAG_COMMAND = 0x0010_0000
FLAG_NUMERIC_PAD = 0x0020_0000
FLAG_SECONDARY_FN = 0x0080_0000

# The contract's modifiers: "meta" is Command on a Mac.
MODIFIER_FLAGS: dict[str, int] = {
    "shift": FLAG_SHIFT,
    "ctrl": FLAG_CONTROL,
    "alt": FLAG_ALTERNATE,
    "meta": FLAG_COMMAND,
}
