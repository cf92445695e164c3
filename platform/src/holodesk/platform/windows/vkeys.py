"""Virtual-key codes (winuser.h) for the contract's key vocabulary.

Modifiers use the side-neutral codes (VK_CONTROL, not VK_LCONTROL) with the left
key's scan code, as a physical keyboard reports them: applications read wParam
VK_CONTROL either way, and the scan code says which side. The sided names
(ctrl_r, ...) send the sided codes, which SendInput maps to the right key's scan
code. Numpad Enter is VK_RETURN with the extended flag, as a keyboard sends it.
"""

from __future__ import annotations

from holodesk.platform.errors import InputError
from holodesk.values.keys import FUNCTION_KEYS

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
VK_NUMPAD0 = 0x60
VK_MULTIPLY = 0x6A
VK_ADD = 0x6B
VK_SUBTRACT = 0x6D
VK_DECIMAL = 0x6E
VK_DIVIDE = 0x6F
VK_F1 = 0x70
VK_NUMLOCK = 0x90
VK_LSHIFT = 0xA0
VK_RSHIFT = 0xA1
VK_LCONTROL = 0xA2
VK_RCONTROL = 0xA3
VK_LMENU = 0xA4
VK_RMENU = 0xA5
# VK_BROWSER_BACK .. VK_MEDIA_PLAY_PAUSE: contiguous, all extended keys.
VK_BROWSER_BACK = 0xA6
VK_MEDIA_PLAY_PAUSE = 0xB3

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
    "ctrl_l": VK_LCONTROL,
    "ctrl_r": VK_RCONTROL,
    "shift_l": VK_LSHIFT,
    "shift_r": VK_RSHIFT,
    "alt_l": VK_LMENU,
    "alt_r": VK_RMENU,
    "meta_l": VK_LWIN,
    "meta_r": VK_RWIN,
    **{f"kp_{n}": VK_NUMPAD0 + n for n in range(10)},
    "kp_enter": VK_RETURN,  # with KEYEVENTF_EXTENDEDKEY: see EXTENDED_KEYS
    "kp_add": VK_ADD,
    "kp_subtract": VK_SUBTRACT,
    "kp_multiply": VK_MULTIPLY,
    "kp_divide": VK_DIVIDE,
    "kp_decimal": VK_DECIMAL,
    "browser_back": 0xA6,
    "browser_forward": 0xA7,
    "browser_refresh": 0xA8,
    "browser_stop": 0xA9,
    "browser_search": 0xAA,
    "browser_favorites": 0xAB,
    "browser_home": 0xAC,
    "volume_mute": 0xAD,
    "volume_down": 0xAE,
    "volume_up": 0xAF,
    "media_next": 0xB0,
    "media_previous": 0xB1,
    "media_stop": 0xB2,
    "media_play_pause": VK_MEDIA_PLAY_PAUSE,
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
        *range(VK_BROWSER_BACK, VK_MEDIA_PLAY_PAUSE + 1),
    }
)
# Named keys that are extended though their virtual-key code is not (VK_RETURN is
# Enter, or Numpad Enter with the flag).
EXTENDED_KEYS: frozenset[str] = frozenset({"kp_enter"})

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


def is_extended(vk: int, key: str = "") -> bool:
    """Whether the event for `vk` (sent for the named `key`, if any) carries
    KEYEVENTF_EXTENDEDKEY."""
    return vk in EXTENDED_VKS or key in EXTENDED_KEYS
