"""evdev keycodes for the contract's key vocabulary and for US-layout characters.

A uinput keyboard sends keycodes, and the compositor's keymap decides what they
type. Named keys mean the same on every layout; characters are mapped for the
US layout (the table below), the only one this route assumes.
"""

from __future__ import annotations

from evdev import ecodes

from holodesk.platform.keys import FUNCTION_KEYS

NAMED_KEYCODES: dict[str, int] = {
    "ctrl": ecodes.KEY_LEFTCTRL,
    "shift": ecodes.KEY_LEFTSHIFT,
    "alt": ecodes.KEY_LEFTALT,
    "meta": ecodes.KEY_LEFTMETA,
    "enter": ecodes.KEY_ENTER,
    "tab": ecodes.KEY_TAB,
    "space": ecodes.KEY_SPACE,
    "backspace": ecodes.KEY_BACKSPACE,
    "delete": ecodes.KEY_DELETE,
    "escape": ecodes.KEY_ESC,
    "up": ecodes.KEY_UP,
    "down": ecodes.KEY_DOWN,
    "left": ecodes.KEY_LEFT,
    "right": ecodes.KEY_RIGHT,
    "home": ecodes.KEY_HOME,
    "end": ecodes.KEY_END,
    "pageup": ecodes.KEY_PAGEUP,
    "pagedown": ecodes.KEY_PAGEDOWN,
    "insert": ecodes.KEY_INSERT,
    "capslock": ecodes.KEY_CAPSLOCK,
    "printscreen": ecodes.KEY_SYSRQ,  # the Print key of PC keyboards
    "menu": ecodes.KEY_COMPOSE,  # the context-menu key of PC keyboards (xkb: Menu)
    **{name: getattr(ecodes, f"KEY_{name.upper()}") for name in FUNCTION_KEYS},
}

# Characters of the US layout: (unshifted, shifted) per key.
_US_ROWS: tuple[tuple[str, str, int], ...] = (
    *(
        (plain, shifted, getattr(ecodes, f"KEY_{digit}"))
        for plain, shifted, digit in zip("1234567890", "!@#$%^&*()", "1234567890", strict=True)
    ),
    ("-", "_", ecodes.KEY_MINUS),
    ("=", "+", ecodes.KEY_EQUAL),
    ("[", "{", ecodes.KEY_LEFTBRACE),
    ("]", "}", ecodes.KEY_RIGHTBRACE),
    ("\\", "|", ecodes.KEY_BACKSLASH),
    (";", ":", ecodes.KEY_SEMICOLON),
    ("'", '"', ecodes.KEY_APOSTROPHE),
    ("`", "~", ecodes.KEY_GRAVE),
    (",", "<", ecodes.KEY_COMMA),
    (".", ">", ecodes.KEY_DOT),
    ("/", "?", ecodes.KEY_SLASH),
    (" ", " ", ecodes.KEY_SPACE),
    *(
        (letter, letter.upper(), getattr(ecodes, f"KEY_{letter.upper()}"))
        for letter in "abcdefghijklmnopqrstuvwxyz"
    ),
)


def _us_characters() -> dict[str, tuple[int, bool]]:
    table: dict[str, tuple[int, bool]] = {}
    for plain, shifted, code in _US_ROWS:
        table[plain] = (code, False)
        table.setdefault(shifted, (code, True))
    return table


US_CHARACTERS: dict[str, tuple[int, bool]] = _us_characters()
ALL_KEYCODES: tuple[int, ...] = tuple(
    sorted(set(NAMED_KEYCODES.values()) | {code for code, _ in US_CHARACTERS.values()})
)


def stroke_for(key: str) -> tuple[int, bool] | None:
    """(keycode, needs shift) for a canonical key name or character, or None if no key types it."""
    if key in NAMED_KEYCODES:
        return NAMED_KEYCODES[key], False
    return US_CHARACTERS.get(key)
