"""Key names for the backends: the contract's key vocabulary (see protos/holodesk/v1/action.proto).

The vocabulary itself is defined once, in `holodesk.values.keys` (the backends' key
tables, the client's safety guard, the daemon and the tests read it from there); this
module holds the platform layer's rules over it.

Every backend receives canonical names only: the modifiers (side-neutral or
left/right-specific), the named keys, or one character. `normalize_key` maps the
spellings agents and people actually use ("Control", "Return", "cmd", "PgUp",
"ArrowUp", "Numpad7", "ControlRight") onto that vocabulary.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from holodesk.platform.errors import UnknownKeyError
from holodesk.values.keys import (
    BROWSER_KEYS,
    EDITING_KEYS,
    KEYPAD_DIGITS,
    KEYPAD_KEYS,
    MEDIA_KEYS,
    MODIFIERS,
    SIDED_MODIFIERS,
    VOCABULARY,
)

# For error messages: the numbered runs collapsed into one entry each.
VOCABULARY_SUMMARY: tuple[str, ...] = (
    *MODIFIERS,
    "ctrl_l/ctrl_r (and shift, alt, meta)",
    *EDITING_KEYS,
    "f1..f24",
    "kp_0..kp_9",
    *KEYPAD_KEYS[len(KEYPAD_DIGITS) :],
    *MEDIA_KEYS,
    *BROWSER_KEYS,
)


def _fold(name: str) -> str:
    """A name without case or separators: "Page_Up", "page up" and "PageUp" are one."""
    folded = name.strip().lower()
    for separator in ("_", "-", " "):
        folded = folded.replace(separator, "")
    return folded


# Aliases, written folded (see _fold).
_ALIASES: dict[str, str] = {
    "control": "ctrl",
    "ctl": "ctrl",
    "option": "alt",
    "opt": "alt",
    "cmd": "meta",
    "command": "meta",
    "super": "meta",
    "win": "meta",
    "windows": "meta",
    "os": "meta",
    "return": "enter",
    "ret": "enter",
    "esc": "escape",
    "spacebar": "space",
    "bksp": "backspace",
    "bs": "backspace",
    "del": "delete",
    "ins": "insert",
    "pgup": "pageup",
    "prior": "pageup",
    "pgdn": "pagedown",
    "pgdown": "pagedown",
    "next": "pagedown",
    "arrowup": "up",
    "uparrow": "up",
    "arrowdown": "down",
    "downarrow": "down",
    "arrowleft": "left",
    "leftarrow": "left",
    "arrowright": "right",
    "rightarrow": "right",
    "caps": "capslock",
    "print": "printscreen",
    "prtsc": "printscreen",
    "prtscr": "printscreen",
    "prtscn": "printscreen",
    "printscr": "printscreen",
    "apps": "menu",
    "application": "menu",
    "contextmenu": "menu",
    # Media and browser keys as DOM `key` values, X keysyms and Windows VK names.
    "mute": "volume_mute",
    "audiovolumemute": "volume_mute",
    "audiomute": "volume_mute",
    "audiovolumedown": "volume_down",
    "audiolowervolume": "volume_down",
    "audiovolumeup": "volume_up",
    "audioraisevolume": "volume_up",
    "playpause": "media_play_pause",
    "audioplay": "media_play_pause",
    "audiostop": "media_stop",
    "mediatracknext": "media_next",
    "medianexttrack": "media_next",
    "nexttrack": "media_next",
    "audionext": "media_next",
    "mediatrackprevious": "media_previous",
    "mediaprevtrack": "media_previous",
    "mediaprev": "media_previous",
    "prevtrack": "media_previous",
    "audioprev": "media_previous",
    "browserfavourites": "browser_favorites",
    "bookmarks": "browser_favorites",
    "homepage": "browser_home",
    "reload": "browser_refresh",
}


def _sided_aliases() -> dict[str, str]:
    """Left/right spellings: ControlLeft (DOM code), Control_R (X keysym), RCtrl,
    LeftCtrl (evdev), LControl, LWin, ..."""
    words = {
        "ctrl": ("ctrl", "control"),
        "shift": ("shift",),
        "alt": ("alt", "option", "menu"),
        "meta": ("meta", "super", "win", "cmd", "command", "os"),
    }
    aliases: dict[str, str] = {}
    for modifier, spellings in words.items():
        for side, long_side in (("l", "left"), ("r", "right")):
            for word in spellings:
                for alias in (word + long_side, long_side + word, side + word, word + side):
                    aliases[alias] = f"{modifier}_{side}"
    # "altr" is fine, but "menul"/"lmenu" only mean Alt as Windows VK names, and
    # "menu" alone stays the context-menu key.
    for alias in ("menuleft", "leftmenu", "menul", "menuright", "rightmenu", "menur"):
        aliases.pop(alias)
    return aliases


def _keypad_aliases() -> dict[str, str]:
    """Numpad0 (DOM code), KP_0 and KP_Add (X keysyms), NumpadAdd, KP_Plus, ..."""
    aliases: dict[str, str] = {}
    for prefix in ("kp", "numpad", "keypad", "num"):
        for digit in range(10):
            aliases[f"{prefix}{digit}"] = f"kp_{digit}"
        for words, name in (
            (("enter", "return"), "kp_enter"),
            (("add", "plus"), "kp_add"),
            (("subtract", "minus"), "kp_subtract"),
            (("multiply", "asterisk", "star"), "kp_multiply"),
            (("divide", "slash"), "kp_divide"),
            (("decimal", "dot", "period", "point"), "kp_decimal"),
        ):
            for word in words:
                aliases[prefix + word] = name
    return aliases


_BY_FOLDED: dict[str, str] = {
    **_keypad_aliases(),
    **_sided_aliases(),
    **_ALIASES,
    **{_fold(name): name for name in VOCABULARY},
}

# X keysym names of media and browser keys: XF86AudioMute, XF86Back, ... Their
# words alone ("back", "stop") would be too vague to be aliases.
_XF86 = "xf86"
_XF86_NAMES: dict[str, str] = {
    "back": "browser_back",
    "forward": "browser_forward",
    "refresh": "browser_refresh",
    "stop": "browser_stop",
    "search": "browser_search",
    "favorites": "browser_favorites",
    "homepage": "browser_home",
}

# Whitespace and control characters that stand for a named key.
_CHARACTER_KEYS: dict[str, str] = {
    " ": "space",
    "\n": "enter",
    "\r": "enter",
    "\t": "tab",
    "\b": "backspace",
    "\x1b": "escape",
    "\x7f": "delete",
}


def normalize_key(name: str) -> str:
    """The canonical name of a key; raises UnknownKeyError if there is none.

    Single characters keep their case ("A" types a capital A); names are
    case-insensitive and separators in them are ignored ("Page_Up", "kp-0").
    """
    if not name:
        raise UnknownKeyError(name, VOCABULARY_SUMMARY)
    # NFC, so "e" + combining acute counts as the one character "é"; only for
    # sequences, as NFC would also replace single compatibility characters.
    composed = unicodedata.normalize("NFC", name) if len(name) > 1 else name
    if len(composed) == 1:
        if composed in _CHARACTER_KEYS:
            return _CHARACTER_KEYS[composed]
        # Control characters name no key; format characters (ZWJ, LRM, ...) are
        # text like any other, typed the way the backend types characters.
        if unicodedata.category(composed) in ("Cc", "Cs"):
            raise UnknownKeyError(name, VOCABULARY_SUMMARY)
        return composed
    folded = _fold(composed)
    canonical = _BY_FOLDED.get(folded)
    if canonical is None and folded.startswith(_XF86):
        rest = folded[len(_XF86) :]
        canonical = _XF86_NAMES.get(rest) or _BY_FOLDED.get(rest)
    if canonical is None:
        raise UnknownKeyError(name, VOCABULARY_SUMMARY)
    return canonical


def is_modifier(key: str) -> bool:
    """True for the modifiers, side-neutral or sided (canonical names)."""
    return key in MODIFIERS or key in SIDED_MODIFIERS


def side_neutral(key: str) -> str:
    """The side-neutral modifier a sided one counts as ("ctrl_r" -> "ctrl"); any
    other canonical key is itself."""
    return SIDED_MODIFIERS.get(key, key)


def holds(held: Iterable[str], modifier: str) -> bool:
    """True when any key in `held` (canonical names) is `modifier`, on either side:
    with shift_r down, a letter already types its capital."""
    return any(side_neutral(key) == modifier for key in held)
