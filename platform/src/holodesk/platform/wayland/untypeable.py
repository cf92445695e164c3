"""The refusal for text a Wayland route cannot type, said once for every route.

A keystroke on Wayland types what the compositor's keymap says; a character its
layout has no key for is dropped by the compositor without a word. So the
routes check the whole text against the keymap first and refuse it before
sending any of it, naming the characters, the desktop and layout, and what to
do: an agent told "caf" was typed as "café" acts on a lie.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from holodesk.platform.errors import InputError

SHOWN = 8  # characters named one by one; the rest are counted
# Categories shown by code point only: format characters, marks, separators, private use.
_INVISIBLE = frozenset({"Cf", "Co", "Cn", "Mn", "Me", "Zl", "Zp"})

ADD_LAYOUT_FIX = (
    "add a keyboard layout that has them to the desktop and make it the active one (GNOME: "
    "Settings > Keyboard > Input Sources; KDE Plasma: System Settings > Keyboard > Layouts); "
    "or type the text without them"
)


def describe(key: str) -> str:
    """ "'é' (U+00E9)"; an invisible character by its code point and name ("U+200D ZERO
    WIDTH JOINER"); a named key as "the f13 key"."""
    if len(key) != 1:
        return f"the {key} key"
    code = f"U+{ord(key):04X}"
    if unicodedata.category(key) in _INVISIBLE:
        return f"{code} {unicodedata.name(key, '')}".strip()
    return f"{key!r} ({code})"


def refusal(cause: str, groups: Sequence[tuple[str, Sequence[str]]], fix: str) -> InputError:
    """InputError for the keys of `groups` (each: what is wrong with them, the keys,
    characters or key names, in text order), after `cause`; `fix` says what to do."""
    said = "; ".join(f"{why}: {_named(keys)}" for why, keys in groups if keys)
    return InputError(f"{cause}; {said}. Nothing of this input was sent. To type them: {fix}")


def _named(keys: Sequence[str]) -> str:
    named = ", ".join(describe(key) for key in keys[:SHOWN])
    more = len(keys) - SHOWN
    return f"{named} and {more} more" if more > 0 else named
