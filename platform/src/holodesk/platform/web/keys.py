"""The contract's key names as DevTools key events (a US keyboard, like a fresh Chromium).

A page sees `key`, `code` and `keyCode` exactly as from a real keyboard: "a" with
Shift held arrives as key "A", code "KeyA", keyCode 65. Characters no US key
types ("é", "€", "日") arrive as a key event whose `key` and text are the
character and whose `code` is empty, which is what an IME or another layout
gives a page too.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.platform.keys import side_neutral
from holodesk.values.keys import FUNCTION_KEYS

# Input.dispatchKeyEvent / dispatchMouseEvent `modifiers` bits.
MODIFIER_BITS: dict[str, int] = {"alt": 1, "ctrl": 2, "meta": 4, "shift": 8}
# Input.dispatchKeyEvent `location` (KeyboardEvent.location); the keypad's location
# (3) comes from `isKeypad` instead, which DevTools takes for it.
LOCATION_STANDARD, LOCATION_LEFT, LOCATION_RIGHT = 0, 1, 2


def modifier_bit(key: str) -> int:
    """The `modifiers` bit a key sets while held (a sided modifier sets its side's
    neutral bit, as from a keyboard); 0 for keys that are no modifier."""
    return MODIFIER_BITS.get(side_neutral(key), 0)


@dataclass(frozen=True)
class KeyDefinition:
    """What one key event carries besides its type and modifiers."""

    key: str
    code: str
    key_code: int
    # The text the key types (empty for keys that type none, such as Tab or F1).
    text: str = ""
    location: int = LOCATION_STANDARD
    keypad: bool = False


def _named() -> dict[str, KeyDefinition]:
    table = {
        "ctrl": KeyDefinition("Control", "ControlLeft", 17, location=LOCATION_LEFT),
        "shift": KeyDefinition("Shift", "ShiftLeft", 16, location=LOCATION_LEFT),
        "alt": KeyDefinition("Alt", "AltLeft", 18, location=LOCATION_LEFT),
        "meta": KeyDefinition("Meta", "MetaLeft", 91, location=LOCATION_LEFT),
        # "\r", as a real Enter types: it is what submits a form.
        "enter": KeyDefinition("Enter", "Enter", 13, "\r"),
        "tab": KeyDefinition("Tab", "Tab", 9),
        "space": KeyDefinition(" ", "Space", 32, " "),
        "backspace": KeyDefinition("Backspace", "Backspace", 8),
        "delete": KeyDefinition("Delete", "Delete", 46),
        "escape": KeyDefinition("Escape", "Escape", 27),
        "up": KeyDefinition("ArrowUp", "ArrowUp", 38),
        "down": KeyDefinition("ArrowDown", "ArrowDown", 40),
        "left": KeyDefinition("ArrowLeft", "ArrowLeft", 37),
        "right": KeyDefinition("ArrowRight", "ArrowRight", 39),
        "home": KeyDefinition("Home", "Home", 36),
        "end": KeyDefinition("End", "End", 35),
        "pageup": KeyDefinition("PageUp", "PageUp", 33),
        "pagedown": KeyDefinition("PageDown", "PageDown", 34),
        "insert": KeyDefinition("Insert", "Insert", 45),
        "capslock": KeyDefinition("CapsLock", "CapsLock", 20),
        "printscreen": KeyDefinition("PrintScreen", "PrintScreen", 44),
        "menu": KeyDefinition("ContextMenu", "ContextMenu", 93),
        "kp_enter": KeyDefinition("Enter", "NumpadEnter", 13, "\r", keypad=True),
        # Media and browser keys: `key` and `code` as the UI Events specs name them,
        # keyCode as Windows' VK_VOLUME_MUTE .. VK_MEDIA_PLAY_PAUSE, VK_BROWSER_*.
        "volume_mute": KeyDefinition("AudioVolumeMute", "AudioVolumeMute", 173),
        "volume_down": KeyDefinition("AudioVolumeDown", "AudioVolumeDown", 174),
        "volume_up": KeyDefinition("AudioVolumeUp", "AudioVolumeUp", 175),
        "media_next": KeyDefinition("MediaTrackNext", "MediaTrackNext", 176),
        "media_previous": KeyDefinition("MediaTrackPrevious", "MediaTrackPrevious", 177),
        "media_stop": KeyDefinition("MediaStop", "MediaStop", 178),
        "media_play_pause": KeyDefinition("MediaPlayPause", "MediaPlayPause", 179),
        "browser_back": KeyDefinition("BrowserBack", "BrowserBack", 166),
        "browser_forward": KeyDefinition("BrowserForward", "BrowserForward", 167),
        "browser_refresh": KeyDefinition("BrowserRefresh", "BrowserRefresh", 168),
        "browser_stop": KeyDefinition("BrowserStop", "BrowserStop", 169),
        "browser_search": KeyDefinition("BrowserSearch", "BrowserSearch", 170),
        "browser_favorites": KeyDefinition("BrowserFavorites", "BrowserFavorites", 171),
        "browser_home": KeyDefinition("BrowserHome", "BrowserHome", 172),
    }
    for neutral in ("ctrl", "shift", "alt", "meta"):
        left = table[neutral]
        table[f"{neutral}_l"] = left
        table[f"{neutral}_r"] = KeyDefinition(
            left.key,
            left.code.replace("Left", "Right"),
            left.key_code + (1 if neutral == "meta" else 0),
            location=LOCATION_RIGHT,
        )
    for number, name in enumerate(FUNCTION_KEYS, start=1):
        table[name] = KeyDefinition(f"F{number}", f"F{number}", 111 + number)
    for digit in range(10):
        table[f"kp_{digit}"] = KeyDefinition(
            str(digit), f"Numpad{digit}", 96 + digit, str(digit), keypad=True
        )
    for name, char, code, key_code in (
        ("kp_multiply", "*", "NumpadMultiply", 106),
        ("kp_add", "+", "NumpadAdd", 107),
        ("kp_subtract", "-", "NumpadSubtract", 109),
        ("kp_decimal", ".", "NumpadDecimal", 110),
        ("kp_divide", "/", "NumpadDivide", 111),
    ):
        table[name] = KeyDefinition(char, code, key_code, char, keypad=True)
    return table


NAMED_DEFINITIONS: dict[str, KeyDefinition] = _named()

# (unshifted, shifted, code, keyCode) for every printable key of a US keyboard.
_US_PUNCTUATION = (
    ("`", "~", "Backquote", 192),
    ("-", "_", "Minus", 189),
    ("=", "+", "Equal", 187),
    ("[", "{", "BracketLeft", 219),
    ("]", "}", "BracketRight", 221),
    ("\\", "|", "Backslash", 220),
    (";", ":", "Semicolon", 186),
    ("'", '"', "Quote", 222),
    (",", "<", "Comma", 188),
    (".", ">", "Period", 190),
    ("/", "?", "Slash", 191),
)
_US_KEYS = (
    *((c, c.upper(), f"Key{c.upper()}", ord(c.upper())) for c in "abcdefghijklmnopqrstuvwxyz"),
    *((d, s, f"Digit{d}", ord(d)) for d, s in zip("0123456789", ")!@#$%^&*(", strict=True)),
    *_US_PUNCTUATION,
)
# character -> (its definition, the definition with Shift held)
_CHARACTERS: dict[str, tuple[KeyDefinition, KeyDefinition]] = {}
for _plain, _shifted, _code, _key_code in _US_KEYS:
    _base = KeyDefinition(_plain, _code, _key_code, _plain)
    _upper = KeyDefinition(_shifted, _code, _key_code, _shifted)
    _CHARACTERS[_plain] = (_base, _upper)
    _CHARACTERS[_shifted] = (_upper, _upper)


def key_definition(key: str, shift_held: bool = False) -> KeyDefinition:
    """The event for a canonical key name (see holodesk.platform.keys) or one character.

    With Shift held a character key gives its shifted character, as on a keyboard.
    """
    if key in NAMED_DEFINITIONS:
        return NAMED_DEFINITIONS[key]
    if len(key) != 1:
        raise ValueError(f"{key!r} is neither a canonical key name nor one character")
    if key in _CHARACTERS:
        plain, shifted = _CHARACTERS[key]
        return shifted if shift_held else plain
    # Not on a US keyboard: the character itself, with no physical key behind it.
    return KeyDefinition(key, "", 0, key)
