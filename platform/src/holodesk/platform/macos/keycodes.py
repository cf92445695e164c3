"""macOS virtual key codes (HIToolbox Events.h, kVK_*) for the contract's key vocabulary.

Named keys have fixed codes on every Mac keyboard. Character keys are positions: the
ANSI table below says which character each position types on a US layout, the
fallback when the current layout cannot be read (see `QuartzApi.keyboard_layout`).
"""

from __future__ import annotations

from holodesk.platform.errors import InputError
from holodesk.platform.macos import cg
from holodesk.values.keys import BROWSER_KEYS, KEYPAD_KEYS, MEDIA_KEYS

NAMED_KEYCODES: dict[str, int] = {
    "meta": 0x37,  # kVK_Command
    "shift": 0x38,  # kVK_Shift
    "capslock": 0x39,  # kVK_CapsLock
    "alt": 0x3A,  # kVK_Option
    "ctrl": 0x3B,  # kVK_Control
    "enter": 0x24,  # kVK_Return
    "tab": 0x30,
    "space": 0x31,
    "backspace": 0x33,  # kVK_Delete: the key left of "=" deletes backwards
    "escape": 0x35,
    "delete": 0x75,  # kVK_ForwardDelete
    "home": 0x73,
    "end": 0x77,
    "pageup": 0x74,
    "pagedown": 0x79,
    "left": 0x7B,
    "right": 0x7C,
    "down": 0x7D,
    "up": 0x7E,
    # Where a PC keyboard's keys reach a Mac: Insert is Help, Print Screen is F13.
    "insert": 0x72,  # kVK_Help
    "printscreen": 0x69,  # kVK_F13
    "menu": 0x6E,  # kVK_ContextualMenu
    "f1": 0x7A,
    "f2": 0x78,
    "f3": 0x63,
    "f4": 0x76,
    "f5": 0x60,
    "f6": 0x61,
    "f7": 0x62,
    "f8": 0x64,
    "f9": 0x65,
    "f10": 0x6D,
    "f11": 0x67,
    "f12": 0x6F,
    "f13": 0x69,
    "f14": 0x6B,
    "f15": 0x71,
    "f16": 0x6A,
    "f17": 0x40,
    "f18": 0x4F,
    "f19": 0x50,
    "f20": 0x5A,
    "ctrl_l": 0x3B,
    "ctrl_r": 0x3E,  # kVK_RightControl
    "shift_l": 0x38,
    "shift_r": 0x3C,  # kVK_RightShift
    "alt_l": 0x3A,
    "alt_r": 0x3D,  # kVK_RightOption
    "meta_l": 0x37,
    "meta_r": 0x36,  # kVK_RightCommand
    # kVK_ANSI_Keypad*: the keypad of a full-size Apple keyboard.
    "kp_0": 0x52,
    "kp_1": 0x53,
    "kp_2": 0x54,
    "kp_3": 0x55,
    "kp_4": 0x56,
    "kp_5": 0x57,
    "kp_6": 0x58,
    "kp_7": 0x59,
    "kp_8": 0x5B,
    "kp_9": 0x5C,
    "kp_enter": 0x4C,
    "kp_add": 0x45,
    "kp_subtract": 0x4E,
    "kp_multiply": 0x43,
    "kp_divide": 0x4B,
    "kp_decimal": 0x41,
}

# Flags a real Apple keyboard sets on these keys' events; some apps look at them.
_ARROWS = frozenset({"left", "right", "down", "up"})
_KEYPAD = frozenset(KEYPAD_KEYS)
_FN_KEYS = frozenset(
    {"home", "end", "pageup", "pagedown", "delete", "insert", *(f"f{n}" for n in range(1, 21))}
)

# Characters each position types on the US (ANSI) layout: (unshifted, shifted).
ANSI_KEYCODES: dict[int, tuple[str, str]] = {
    0x00: ("a", "A"),
    0x01: ("s", "S"),
    0x02: ("d", "D"),
    0x03: ("f", "F"),
    0x04: ("h", "H"),
    0x05: ("g", "G"),
    0x06: ("z", "Z"),
    0x07: ("x", "X"),
    0x08: ("c", "C"),
    0x09: ("v", "V"),
    0x0B: ("b", "B"),
    0x0C: ("q", "Q"),
    0x0D: ("w", "W"),
    0x0E: ("e", "E"),
    0x0F: ("r", "R"),
    0x10: ("y", "Y"),
    0x11: ("t", "T"),
    0x12: ("1", "!"),
    0x13: ("2", "@"),
    0x14: ("3", "#"),
    0x15: ("4", "$"),
    0x16: ("6", "^"),
    0x17: ("5", "%"),
    0x18: ("=", "+"),
    0x19: ("9", "("),
    0x1A: ("7", "&"),
    0x1B: ("-", "_"),
    0x1C: ("8", "*"),
    0x1D: ("0", ")"),
    0x1E: ("]", "}"),
    0x1F: ("o", "O"),
    0x20: ("u", "U"),
    0x21: ("[", "{"),
    0x22: ("i", "I"),
    0x23: ("p", "P"),
    0x25: ("l", "L"),
    0x26: ("j", "J"),
    0x27: ("'", '"'),
    0x28: ("k", "K"),
    0x29: (";", ":"),
    0x2A: ("\\", "|"),
    0x2B: (",", "<"),
    0x2C: ("/", "?"),
    0x2D: ("n", "N"),
    0x2E: ("m", "M"),
    0x2F: (".", ">"),
    0x32: ("`", "~"),
}


def ansi_layout() -> dict[str, tuple[int, int]]:
    """character -> (keycode, flags needed), for the US layout."""
    layout: dict[str, tuple[int, int]] = {}
    for keycode, (plain, shifted) in ANSI_KEYCODES.items():
        layout[plain] = (keycode, 0)
        layout[shifted] = (keycode, cg.FLAG_SHIFT)
    return layout


def keycode_for_named_key(key: str) -> int:
    try:
        return NAMED_KEYCODES[key]
    except KeyError:
        if key in {f"f{n}" for n in range(21, 25)}:
            raise InputError(f"macOS has no key {key.upper()}: Mac keyboards stop at F20") from None
        if key in MEDIA_KEYS or key in BROWSER_KEYS:
            # Media keys reach macOS as system-defined (NX_KEYTYPE) events, not key
            # codes, and Macs have no browser keys; use a shortcut instead (cmd+[ is Back).
            raise InputError(
                f"the macOS backend cannot send {key!r}: macOS has no key code for it"
            ) from None
        raise InputError(f"{key!r} is not a named key of the contract") from None


def hardware_flags(key: str) -> int:
    """The flags a real keyboard adds to a named key's events."""
    if key in _ARROWS:
        return cg.FLAG_NUMERIC_PAD | cg.FLAG_SECONDARY_FN
    if key in _KEYPAD:
        return cg.FLAG_NUMERIC_PAD
    if key in _FN_KEYS:
        return cg.FLAG_SECONDARY_FN
    return 0
