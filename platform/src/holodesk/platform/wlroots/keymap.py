"""The xkb keymap this route uploads to its virtual keyboard, and the keys of each character.

A virtual keyboard sends keycodes; the keymap we upload with it says what they
mean, so this route is not at the mercy of the user's layout. It holds:

- every named key of the contract's vocabulary (holodesk.platform.keys) on its
  evdev keycode, with its X keysym (the same tables the uinput and X11 routes use);
- the US layout's characters on their keys, plain and shifted (so "B" is Shift+b,
  as an app expects from a keyboard);
- spare keycodes ("slots"), each bound on demand to one character no key above
  types (é, €, 日, a zero-width joiner...), as its keysym on a one-level key, so it
  types whatever modifiers are held. Slots are reused least recently used first.

Keycodes stay in 8..255 (evdev 1..247): Xwayland, and so every X11 app on the
desktop, can address no more.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from holodesk.platform.errors import InputError
from holodesk.platform.wayland.keycodes import NAMED_KEYCODES, US_CHARACTERS
from holodesk.platform.x11.keysyms import NAMED_KEYSYMS, keysym_for_char
from holodesk.values.keys import VOCABULARY

XKB_OFFSET = 8  # xkb keycode = evdev keycode + 8
MAX_EVDEV_KEYCODE = 255 - XKB_OFFSET
# Keysyms whose keys set a real modifier: X's modifier names, as xkb_symbols writes them.
_MODIFIER_OF_KEYSYM: dict[int, str] = {
    0xFFE1: "Shift", 0xFFE2: "Shift",  # Shift_L, Shift_R
    0xFFE3: "Control", 0xFFE4: "Control",  # Control_L, Control_R
    0xFFE5: "Lock",  # Caps_Lock
    0xFFE9: "Mod1", 0xFFEA: "Mod1",  # Alt_L, Alt_R
    0xFFEB: "Mod4", 0xFFEC: "Mod4",  # Super_L, Super_R
}  # fmt: skip
# The real modifiers' bits in an xkb modifier mask (their indices are fixed: 0..7).
MODIFIER_BITS = {"Shift": 1 << 0, "Lock": 1 << 1, "Control": 1 << 2, "Mod1": 1 << 3,
                 "Mod4": 1 << 6}  # fmt: skip
LOCK_BIT = MODIFIER_BITS["Lock"]


@dataclass(frozen=True)
class Stroke:
    """The evdev keycode that types a key, and whether Shift must be held for it."""

    keycode: int
    shift: bool = False


class Keymap:
    """The keymap's contents; `text()` is what gets uploaded."""

    def __init__(self) -> None:
        self._levels: dict[int, tuple[int, ...]] = {}
        self._named: dict[str, int] = {}
        for name in VOCABULARY:
            code, keysym = NAMED_KEYCODES.get(name), NAMED_KEYSYMS.get(name)
            if code is not None and keysym is not None and code <= MAX_EVDEV_KEYCODE:
                self._named[name] = code
                self._levels.setdefault(code, (keysym,))
        self._us: dict[str, Stroke] = {}
        for char, (code, shift) in US_CHARACTERS.items():
            self._us[char] = Stroke(code, shift)
            if char != " ":
                plain, shifted = _us_pair(code)
                self._levels[code] = (keysym_for_char(plain), keysym_for_char(shifted))
        self._free = [c for c in range(1, MAX_EVDEV_KEYCODE + 1) if c not in self._levels]
        self._slots: OrderedDict[str, int] = OrderedDict()

    @property
    def capacity(self) -> int:
        """How many characters the slots hold at once."""
        return len(self._free) + len(self._slots)

    def named(self, key: str) -> int:
        """The keycode of a named key; InputError when this keymap has none."""
        try:
            return self._named[key]
        except KeyError:
            raise InputError(f"the wlroots route has no key for {key!r}") from None

    def modifier_bit(self, keycode: int) -> int:
        """The real modifier a key sets while held (0 for none): the compositor
        tracks no state for a virtual keyboard, so its client says it."""
        levels = self._levels.get(keycode)
        if not levels or keycode in self._free:
            return 0
        modifier = _MODIFIER_OF_KEYSYM.get(levels[0])
        return MODIFIER_BITS[modifier] if modifier else 0

    def us_stroke(self, char: str) -> Stroke | None:
        """The US-layout key (and Shift) typing `char`, if there is one."""
        return self._us.get(char)

    def slot(self, char: str) -> int | None:
        """The slot keycode bound to `char`, if bound now (and marks it used)."""
        code = self._slots.get(char)
        if code is not None:
            self._slots.move_to_end(char)
        return code

    def would_rebind(self, chars: Iterable[str]) -> bool:
        """Whether binding `chars` takes keys from characters bound now."""
        new = {char for char in chars if char not in self._slots}
        return len(new) > len(self._free)

    def bind(self, chars: Iterable[str], keep: Iterable[int] = ()) -> bool:
        """Give each character a slot, evicting the least recently used ones (never
        those in `keep`: keys held down now). True when the keymap changed, so it
        must be uploaded again. InputError for a character no keysym types."""
        wanted = list(dict.fromkeys(chars))
        keysyms = {char: keysym_for_char(char) for char in wanted}
        held = set(keep)
        changed = False
        for char in wanted:
            if char in self._slots:
                self._slots.move_to_end(char)
                continue
            if not self._free:
                victim = next(
                    (c for c, code in self._slots.items() if c not in wanted and code not in held),
                    None,
                )
                if victim is None:
                    raise InputError(
                        f"too many distinct characters at once for the keymap's "
                        f"{self.capacity} spare keys"
                    )
                self._free.append(self._slots.pop(victim))
            code = self._free.pop(0)
            self._slots[char] = code
            self._levels[code] = (keysyms[char],)
            changed = True
        return changed

    def text(self) -> str:
        """The keymap in xkb's text format (XKB_KEYMAP_FORMAT_TEXT_V1)."""
        codes = sorted(code for code in self._levels if code not in self._free)
        names = "\n".join(f"    <I{c + XKB_OFFSET}> = {c + XKB_OFFSET};" for c in codes)
        symbols = "\n".join(
            f"    key <I{c + XKB_OFFSET}> {{ [ {_keysyms(self._levels[c])} ] }};" for c in codes
        )
        modifiers: dict[str, list[str]] = {}
        for code in codes:
            modifier = _MODIFIER_OF_KEYSYM.get(self._levels[code][0])
            if modifier is not None:
                modifiers.setdefault(modifier, []).append(f"<I{code + XKB_OFFSET}>")
        modmap = "\n".join(
            f"    modifier_map {modifier} {{ {', '.join(keys)} }};"
            for modifier, keys in modifiers.items()
        )
        return (
            "xkb_keymap {\n"
            f'  xkb_keycodes "holodesk" {{\n    minimum = {XKB_OFFSET};\n    maximum = 255;\n'
            f"{names}\n  }};\n"
            '  xkb_types "holodesk" { include "complete" };\n'
            '  xkb_compatibility "holodesk" { include "complete" };\n'
            f'  xkb_symbols "holodesk" {{\n{symbols}\n{modmap}\n  }};\n'
            "};\n"
        )


def _us_pair(code: int) -> tuple[str, str]:
    """The (plain, shifted) characters of a US-layout key."""
    plain = next(c for c, (k, shift) in US_CHARACTERS.items() if k == code and not shift)
    shifted = next((c for c, (k, shift) in US_CHARACTERS.items() if k == code and shift), plain)
    return plain, shifted


def _keysyms(levels: tuple[int, ...]) -> str:
    """A key's levels as xkb_symbols writes keysyms: numbers, so no name table is needed."""
    return ", ".join(f"0x{keysym:08x}" for keysym in levels)
