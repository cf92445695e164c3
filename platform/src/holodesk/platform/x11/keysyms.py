"""Keysyms for canonical key names and for characters (pure tables, no X connection)."""

from __future__ import annotations

import unicodedata

from holodesk.platform.errors import InputError

# keysymdef.h values, written out so this module needs no X library.
NAMED_KEYSYMS: dict[str, int] = {
    "ctrl": 0xFFE3,  # Control_L
    "shift": 0xFFE1,  # Shift_L
    "alt": 0xFFE9,  # Alt_L
    "meta": 0xFFEB,  # Super_L: the Windows/Command key on X11
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
}
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
    if unicodedata.category(char).startswith("C"):
        raise InputError(f"cannot type the control character U+{ord(char):04X}")
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
