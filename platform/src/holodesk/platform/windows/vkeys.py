"""Virtual-key codes (winuser.h) for the contract's key vocabulary.

Modifiers use the side-neutral codes (VK_CONTROL, not VK_LCONTROL) with the left
key's scan code, as a physical keyboard reports them: applications read wParam
VK_CONTROL either way, and the scan code says which side.
"""

from __future__ import annotations

from holodesk.platform.errors import InputError
from holodesk.platform.keys import FUNCTION_KEYS

VK_BACK = 0x08
VK_TAB = 0x09
VK_RETURN = 0x0D
VK_SHIFT = 0x10
VK_CONTROL = 0x11
VK_MENU = 0x12  # Alt
VK_CAPITAL = 0x14
VK_ESCAPE = 0x1B
VK_SPACE = 0x20
VK_PRIOR = 0x21
VK_NEXT = 0x22
VK_END = 0x23
VK_HOME = 0x24
VK_LEFT = 0x25
VK_UP = 0x26
VK_RIGHT = 0x27
VK_DOWN = 0x28
VK_SNAPSHOT = 0x2C
VK_INSERT = 0x2D
VK_DELETE = 0x2E
VK_LWIN = 0x5B
VK_RWIN = 0x5C
VK_APPS = 0x5D
VK_DIVIDE = 0x6F
VK_F1 = 0x70
VK_NUMLOCK = 0x90
VK_RCONTROL = 0xA3
VK_RMENU = 0xA5

NAMED_VKS: dict[str, int] = {
    "ctrl": VK_CONTROL,
    "shift": VK_SHIFT,
    "alt": VK_MENU,
    "meta": VK_LWIN,
    "enter": VK_RETURN,
    "tab": VK_TAB,
    "space": VK_SPACE,
    "backspace": VK_BACK,
    "delete": VK_DELETE,
    "escape": VK_ESCAPE,
    "up": VK_UP,
    "down": VK_DOWN,
    "left": VK_LEFT,
    "right": VK_RIGHT,
    "home": VK_HOME,
    "end": VK_END,
    "pageup": VK_PRIOR,
    "pagedown": VK_NEXT,
    "insert": VK_INSERT,
    "capslock": VK_CAPITAL,
    "printscreen": VK_SNAPSHOT,
    "menu": VK_APPS,
    **{name: VK_F1 + number for number, name in enumerate(FUNCTION_KEYS)},  # F1..F24
}

# Keys whose scan code carries the E0 prefix: SendInput needs KEYEVENTF_EXTENDEDKEY
# for them, or Windows takes an arrow for the numeric keypad's 8/4/6/2 and Home,
# End, Insert, Delete, Page Up/Down for theirs.
EXTENDED_VKS: frozenset[int] = frozenset(
    {
        VK_INSERT,
        VK_DELETE,
        VK_HOME,
        VK_END,
        VK_PRIOR,
        VK_NEXT,
        VK_LEFT,
        VK_UP,
        VK_RIGHT,
        VK_DOWN,
        VK_SNAPSHOT,
        VK_LWIN,
        VK_RWIN,
        VK_APPS,
        VK_RCONTROL,
        VK_RMENU,
        VK_NUMLOCK,
        VK_DIVIDE,
    }
)

# VkKeyScanW's shift-state bits: which modifiers type a character.
SHIFT_STATE_SHIFT = 0x01
SHIFT_STATE_CTRL = 0x02
SHIFT_STATE_ALT = 0x04


def vk_for_named_key(key: str) -> int:
    """The virtual-key code of a canonical named key."""
    try:
        return NAMED_VKS[key]
    except KeyError:
        raise InputError(f"{key!r} is not a named key of the contract") from None


def is_extended(vk: int) -> bool:
    return vk in EXTENDED_VKS
