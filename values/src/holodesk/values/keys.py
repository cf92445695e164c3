"""The contract's key vocabulary (protos/holodesk/v1/action.proto), its one definition.

The backends' key tables, the client's safety guard, the daemon's parsers, schemas
and prompts, and the tests all read the groups below rather than keeping lists of
their own. `VOCABULARY` is every canonical name, in order; one character (what a key
types) is a key name too. Spellings ("Control", "Return", "PgUp") are mapped onto it
by the platform layer's `holodesk.platform.keys.normalize_key`.
"""

from __future__ import annotations

# The side-neutral modifiers: the left key on every backend, and the only ones a
# click or drag may hold (holodesk.v1.Modifier).
MODIFIERS: tuple[str, ...] = ("ctrl", "shift", "alt", "meta")
# Left/right-specific modifiers, each with the side-neutral modifier it counts as
# (for held-modifier state and the client's chord denylist: ctrl_r+alt+delete is
# ctrl+alt+delete). "alt_r" is the right Alt key, which some layouts call AltGr.
SIDED_MODIFIERS: dict[str, str] = {
    f"{modifier}_{side}": modifier for modifier in MODIFIERS for side in ("l", "r")
}
MODIFIER_KEYS: tuple[str, ...] = (*MODIFIERS, *SIDED_MODIFIERS)

FUNCTION_KEYS: tuple[str, ...] = tuple(f"f{n}" for n in range(1, 25))
EDITING_KEYS: tuple[str, ...] = (
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
)
# The numeric keypad: what its keys type with Num Lock on. A keypad key is its own
# key to an application (a spreadsheet or game tells kp_enter from enter).
KEYPAD_DIGITS: tuple[str, ...] = tuple(f"kp_{n}" for n in range(10))
KEYPAD_KEYS: tuple[str, ...] = (
    *KEYPAD_DIGITS,
    "kp_enter",
    "kp_add",
    "kp_subtract",
    "kp_multiply",
    "kp_divide",
    "kp_decimal",
)
MEDIA_KEYS: tuple[str, ...] = (
    "volume_mute",
    "volume_down",
    "volume_up",
    "media_play_pause",
    "media_stop",
    "media_next",
    "media_previous",
)
BROWSER_KEYS: tuple[str, ...] = (
    "browser_back",
    "browser_forward",
    "browser_refresh",
    "browser_stop",
    "browser_search",
    "browser_favorites",
    "browser_home",
)
NAMED_KEYS: tuple[str, ...] = (
    *EDITING_KEYS,
    *FUNCTION_KEYS,
    *KEYPAD_KEYS,
    *MEDIA_KEYS,
    *BROWSER_KEYS,
)
# Every canonical key name (one character aside), modifiers first.
VOCABULARY: tuple[str, ...] = (*MODIFIER_KEYS, *NAMED_KEYS)
CANONICAL_KEYS: frozenset[str] = frozenset(VOCABULARY)
