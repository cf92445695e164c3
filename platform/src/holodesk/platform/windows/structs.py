"""SendInput's structures and constants (winuser.h), defined with fixed-width ctypes.

Fixed widths, not ctypes.wintypes, so the layout is Windows' on any host: Windows'
LONG is 32 bits even where the host C long is 64 (Linux, macOS), and ULONG_PTR is
pointer sized. On a 64-bit Python these are exactly the Windows x64 layouts
(INPUT is 40 bytes), which the tests check field by field.
"""

from __future__ import annotations

import ctypes

LONG = ctypes.c_int32
DWORD = ctypes.c_uint32
WORD = ctypes.c_uint16
ULONG_PTR = ctypes.c_size_t  # pointer sized on every platform Python supports

# INPUT.type
INPUT_MOUSE = 0
INPUT_KEYBOARD = 1
INPUT_HARDWARE = 2

# MOUSEINPUT.dwFlags
MOUSEEVENTF_MOVE = 0x0001
MOUSEEVENTF_LEFTDOWN = 0x0002
MOUSEEVENTF_LEFTUP = 0x0004
MOUSEEVENTF_RIGHTDOWN = 0x0008
MOUSEEVENTF_RIGHTUP = 0x0010
MOUSEEVENTF_MIDDLEDOWN = 0x0020
MOUSEEVENTF_MIDDLEUP = 0x0040
MOUSEEVENTF_XDOWN = 0x0080
MOUSEEVENTF_XUP = 0x0100
MOUSEEVENTF_WHEEL = 0x0800
MOUSEEVENTF_HWHEEL = 0x1000
MOUSEEVENTF_MOVE_NOCOALESCE = 0x2000
MOUSEEVENTF_VIRTUALDESK = 0x4000
MOUSEEVENTF_ABSOLUTE = 0x8000

# MOUSEINPUT.mouseData for the X buttons
XBUTTON1 = 0x0001
XBUTTON2 = 0x0002
# One wheel notch; a positive delta turns the wheel away from the user (up) or right.
WHEEL_DELTA = 120

# KEYBDINPUT.dwFlags
KEYEVENTF_EXTENDEDKEY = 0x0001
KEYEVENTF_KEYUP = 0x0002
KEYEVENTF_UNICODE = 0x0004
KEYEVENTF_SCANCODE = 0x0008


class MOUSEINPUT(ctypes.Structure):
    _fields_ = (
        ("dx", LONG),
        ("dy", LONG),
        ("mouseData", DWORD),
        ("dwFlags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class KEYBDINPUT(ctypes.Structure):
    _fields_ = (
        ("wVk", WORD),
        ("wScan", WORD),
        ("dwFlags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class HARDWAREINPUT(ctypes.Structure):
    _fields_ = (
        ("uMsg", DWORD),
        ("wParamL", WORD),
        ("wParamH", WORD),
    )


class INPUT_UNION(ctypes.Union):  # noqa: N801 - the Windows name
    _fields_ = (
        ("mi", MOUSEINPUT),
        ("ki", KEYBDINPUT),
        ("hi", HARDWAREINPUT),
    )


class INPUT(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = (
        ("type", DWORD),
        ("u", INPUT_UNION),
    )


def mouse_input(dx: int = 0, dy: int = 0, data: int = 0, flags: int = 0) -> INPUT:
    """An INPUT of type INPUT_MOUSE; `data` may be negative (wheel deltas are signed)."""
    event = INPUT(type=INPUT_MOUSE)
    event.mi.dx = dx
    event.mi.dy = dy
    # mouseData is a DWORD holding a signed value for wheel deltas: two's complement.
    event.mi.mouseData = data & 0xFFFFFFFF
    event.mi.dwFlags = flags
    return event


def keyboard_input(vk: int = 0, scan: int = 0, flags: int = 0) -> INPUT:
    """An INPUT of type INPUT_KEYBOARD."""
    event = INPUT(type=INPUT_KEYBOARD)
    event.ki.wVk = vk
    event.ki.wScan = scan
    event.ki.dwFlags = flags
    return event


def signed_mouse_data(event: INPUT) -> int:
    """mouseData read back as the signed value it carries."""
    value = int(event.mi.mouseData)
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value
