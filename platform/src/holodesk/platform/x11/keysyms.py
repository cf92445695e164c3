"""Keysyms for canonical key names and for characters (pure tables, no X connection)."""

from __future__ import annotations

import unicodedata

from holodesk.platform.errors import InputError
from holodesk.values.keys import KEYPAD_KEYS

# keysymdef.h values, written out so this module needs no X library.
NAMED_KEYSYMS: dict[str, int] = {
    "ctrl": 0xFFE3,  # Control_L
    "shift": 0xFFE1,  # Shift_L
    "alt": 0xFFE9,  # Alt_L
    "meta": 0xFFEB,  # Super_L: the Windows/Command key on X11
    "ctrl_l": 0xFFE3,
    "ctrl_r": 0xFFE4,  # Control_R
    "shift_l": 0xFFE1,
    "shift_r": 0xFFE2,  # Shift_R
    "alt_l": 0xFFE9,
    "alt_r": 0xFFEA,  # Alt_R
    "meta_l": 0xFFEB,
    "meta_r": 0xFFEC,  # Super_R
    "enter": 0xFF0D,  # Return
    "tab": 0xFF09,
    "space": 0x0020,
    "backspace": 0xFF08,
    "delete": 0xFFFF,
    "escape": 0xFF1B,
    "up": 0xFF52,
    "down": 0xFF54,
    "left": 0xFF51,
    "right": 0xFF53,
    "home": 0xFF50,
    "end": 0xFF57,
    "pageup": 0xFF55,  # Prior
    "pagedown": 0xFF56,  # Next
    "insert": 0xFF63,
    "capslock": 0xFFE5,
    "printscreen": 0xFF61,  # Print
    "menu": 0xFF67,
    **{f"f{n}": 0xFFBE + n - 1 for n in range(1, 25)},  # F1 = 0xFFBE, contiguous to F35
    **{f"kp_{n}": 0xFFB0 + n for n in range(10)},  # KP_0 .. KP_9
    "kp_enter": 0xFF8D,
    "kp_add": 0xFFAB,
    "kp_subtract": 0xFFAD,
    "kp_multiply": 0xFFAA,
    "kp_divide": 0xFFAF,
    "kp_decimal": 0xFFAE,
    # XF86keysym.h: what media and browser keys send on X11.
    "volume_mute": 0x1008FF12,  # XF86AudioMute
    "volume_down": 0x1008FF11,  # XF86AudioLowerVolume
    "volume_up": 0x1008FF13,  # XF86AudioRaiseVolume
    "media_play_pause": 0x1008FF14,  # XF86AudioPlay (a toggle on keyboards with one key)
    "media_stop": 0x1008FF15,  # XF86AudioStop
    "media_next": 0x1008FF17,  # XF86AudioNext
    "media_previous": 0x1008FF16,  # XF86AudioPrev
    "browser_back": 0x1008FF26,  # XF86Back
    "browser_forward": 0x1008FF27,  # XF86Forward
    "browser_refresh": 0x1008FF29,  # XF86Refresh
    "browser_stop": 0x1008FF28,  # XF86Stop
    "browser_search": 0x1008FF1B,  # XF86Search
    "browser_favorites": 0x1008FF30,  # XF86Favorites
    "browser_home": 0x1008FF18,  # XF86HomePage
}
# Keypad keysyms: a stock keymap puts KP_0 on the same key as KP_Insert, selected
# by Num Lock (or Shift), so a keypad key is typed on a key of its own instead.
KEYPAD_KEYSYMS: frozenset[int] = frozenset(NAMED_KEYSYMS[key] for key in KEYPAD_KEYS)
SHIFT_KEYSYM = NAMED_KEYSYMS["shift"]
CAPS_LOCK_KEYSYM = NAMED_KEYSYMS["capslock"]

# Characters typed as a named key rather than as text.
_CONTROL_CHARACTERS: dict[str, int] = {
    "\n": NAMED_KEYSYMS["enter"],
    "\r": NAMED_KEYSYMS["enter"],
    "\t": NAMED_KEYSYMS["tab"],
    "\b": NAMED_KEYSYMS["backspace"],
    "\x1b": NAMED_KEYSYMS["escape"],
    "\x7f": NAMED_KEYSYMS["delete"],
}

# Legacy (pre-Unicode) keysyms common in real keymaps for characters outside
# Latin-1, so a key that already types them is found instead of rebound.
_LEGACY: dict[int, str] = {0x20AC: "€"}
_LEGACY_BY_CHAR = {char: keysym for keysym, char in _LEGACY.items()}

_UNICODE_OFFSET = 0x01000000


def keysym_for_key(key: str) -> int:
    """The keysym of a canonical key name (see `holodesk.platform.keys`)."""
    if key in NAMED_KEYSYMS:
        return NAMED_KEYSYMS[key]
    if len(key) == 1:
        return keysym_for_char(key)
    raise InputError(f"{key!r} is not a canonical key name")


def keysym_for_char(char: str) -> int:
    """The keysym that types `char`: Latin-1 keysyms equal the code point, others are U+ keysyms."""
    if char in _CONTROL_CHARACTERS:
        return _CONTROL_CHARACTERS[char]
    # Only real control characters are refused: format characters (a zero-width
    # joiner in an emoji sequence, ZWNJ, LRM/RLM, tags) are text, typed as U+ keysyms.
    category = unicodedata.category(char)
    if category == "Cc":
        raise InputError(f"cannot type the control character U+{ord(char):04X}")
    if category == "Cs":
        raise InputError(
            f"cannot type the lone surrogate U+{ord(char):04X}: the text is not valid Unicode"
        )
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return _UNICODE_OFFSET + code


def keysym_alternatives(keysym: int) -> tuple[int, ...]:
    """Keysyms that type the same character (e.g. EuroSign and U+20AC)."""
    char = char_for_keysym(keysym)
    if char is None:
        return (keysym,)
    alternatives = {keysym, _UNICODE_OFFSET + ord(char)}
    if char in _LEGACY_BY_CHAR:
        alternatives.add(_LEGACY_BY_CHAR[char])
    if ord(char) <= 0xFF:
        alternatives.add(ord(char))
    return (keysym, *sorted(alternatives - {keysym}))


def char_for_keysym(keysym: int) -> str | None:
    """The character a keysym types, when it is a character keysym we know."""
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if _UNICODE_OFFSET + 0x100 <= keysym <= _UNICODE_OFFSET + 0x10FFFF:
        return chr(keysym - _UNICODE_OFFSET)
    return _LEGACY.get(keysym)
