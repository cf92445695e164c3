"""evdev keycodes for the contract's key vocabulary and for US-layout characters.

A uinput keyboard sends keycodes, and the compositor's keymap decides what they
type. Named keys mean the same on every layout; the US layout's characters (the
table below) are what the uinput route assumes where the desktop's own layout
cannot be read (`uinput_strokes`), and what the wlroots route's keymap puts on
its keys.
"""

from __future__ import annotations

from evdev import ecodes

from holodesk.values.keys import FUNCTION_KEYS

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
    "ctrl_l": ecodes.KEY_LEFTCTRL,
    "ctrl_r": ecodes.KEY_RIGHTCTRL,
    "shift_l": ecodes.KEY_LEFTSHIFT,
    "shift_r": ecodes.KEY_RIGHTSHIFT,
    "alt_l": ecodes.KEY_LEFTALT,
    "alt_r": ecodes.KEY_RIGHTALT,
    "meta_l": ecodes.KEY_LEFTMETA,
    "meta_r": ecodes.KEY_RIGHTMETA,
    **{f"kp_{n}": getattr(ecodes, f"KEY_KP{n}") for n in range(10)},
    "kp_enter": ecodes.KEY_KPENTER,
    "kp_add": ecodes.KEY_KPPLUS,
    "kp_subtract": ecodes.KEY_KPMINUS,
    "kp_multiply": ecodes.KEY_KPASTERISK,
    "kp_divide": ecodes.KEY_KPSLASH,
    "kp_decimal": ecodes.KEY_KPDOT,
    "volume_mute": ecodes.KEY_MUTE,
    "volume_down": ecodes.KEY_VOLUMEDOWN,
    "volume_up": ecodes.KEY_VOLUMEUP,
    "media_play_pause": ecodes.KEY_PLAYPAUSE,
    "media_stop": ecodes.KEY_STOPCD,
    "media_next": ecodes.KEY_NEXTSONG,
    "media_previous": ecodes.KEY_PREVIOUSSONG,
    "browser_back": ecodes.KEY_BACK,
    "browser_forward": ecodes.KEY_FORWARD,
    "browser_refresh": ecodes.KEY_REFRESH,
    "browser_stop": ecodes.KEY_STOP,
    "browser_search": ecodes.KEY_SEARCH,
    "browser_favorites": ecodes.KEY_BOOKMARKS,
    "browser_home": ecodes.KEY_HOMEPAGE,
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
