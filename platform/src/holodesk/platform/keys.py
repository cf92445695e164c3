"""The key vocabulary of the contract (see protos/holodesk/v1/action.proto).

Every backend receives canonical names only: the modifiers, the named keys, or
one character. `normalize_key` maps the spellings agents and people actually
use ("Control", "Return", "cmd", "PgUp", "ArrowUp") onto that vocabulary.
"""

from __future__ import annotations

import unicodedata

from holodesk.platform.errors import UnknownKeyError

MODIFIERS: tuple[str, ...] = ("ctrl", "shift", "alt", "meta")
FUNCTION_KEYS: tuple[str, ...] = tuple(f"f{n}" for n in range(1, 25))
NAMED_KEYS: tuple[str, ...] = (
    "enter",
    "tab",
    "space",
    "backspace",
    "delete",
    "escape",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pagedown",
    "insert",
    "capslock",
    "printscreen",
    "menu",
    *FUNCTION_KEYS,
)
CANONICAL_KEYS: frozenset[str] = frozenset(MODIFIERS + NAMED_KEYS)
# For error messages: the function keys collapsed into one entry.
VOCABULARY_SUMMARY: tuple[str, ...] = (*MODIFIERS, *NAMED_KEYS[: -len(FUNCTION_KEYS)], "f1..f24")

# Aliases, written without separators: "page_up", "Page Up" and "page-up" all
# reduce to "pageup" before lookup.
_ALIASES: dict[str, str] = {
    "control": "ctrl",
    "ctl": "ctrl",
    "lctrl": "ctrl",
    "rctrl": "ctrl",
    "controlleft": "ctrl",
    "controlright": "ctrl",
    "shiftleft": "shift",
    "shiftright": "shift",
    "lshift": "shift",
    "rshift": "shift",
    "option": "alt",
    "opt": "alt",
    "lalt": "alt",
    "altleft": "alt",
    "cmd": "meta",
    "command": "meta",
    "super": "meta",
    "win": "meta",
    "windows": "meta",
    "lwin": "meta",
    "os": "meta",
    "metaleft": "meta",
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
    case-insensitive.
    """
    if not name:
        raise UnknownKeyError(name, VOCABULARY_SUMMARY)
    # NFC, so "e" + combining acute counts as the one character "é"; only for
    # sequences, as NFC would also replace single compatibility characters.
    composed = unicodedata.normalize("NFC", name) if len(name) > 1 else name
    if len(composed) == 1:
        if composed in _CHARACTER_KEYS:
            return _CHARACTER_KEYS[composed]
        if unicodedata.category(composed).startswith("C"):
            raise UnknownKeyError(name, VOCABULARY_SUMMARY)
        return composed
    folded = composed.strip().lower()
    for separator in ("_", "-", " "):
        folded = folded.replace(separator, "")
    if folded in CANONICAL_KEYS:
        return folded
    if folded in _ALIASES:
        return _ALIASES[folded]
    raise UnknownKeyError(name, VOCABULARY_SUMMARY)


def is_modifier(key: str) -> bool:
    """True for the four modifiers (canonical names)."""
    return key in MODIFIERS
