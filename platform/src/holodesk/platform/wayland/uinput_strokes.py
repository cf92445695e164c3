"""The keystrokes that type each character on the uinput route, from the desktop's own layout.

A uinput keyboard sends keycodes, and the compositor reads them with its keymap
(the desktop's keyboard layout): on a German desktop KEY_Y types "z", and a
character no key of that layout has cannot be typed at all. So the strokes come
from the compositor's keymap (`seat_keymap`): for each character the first key,
in keycode order, that types it with no modifier, Shift, AltGr
(ISO_Level3_Shift) or both, in every layout the keymap has (the active one is
not told to holodesk), on a keycode X11 apps can receive (at most 255). Text
with a character that has none is refused before any of it is typed.

Where the keymap cannot be read, the US layout is assumed (`UsStrokes`, the
route's old table), and its refusals say so.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from holodesk.platform.errors import InputError
from holodesk.platform.wayland.keycodes import US_CHARACTERS
from holodesk.platform.wayland.seat_keymap import KeymapUnknownError, SeatKeymap
from holodesk.platform.wayland.untypeable import ADD_LAYOUT_FIX, refusal
from holodesk.platform.wayland.xkb import EVDEV_OFFSET, XkbKeymap

log = logging.getLogger(__name__)

KEY_LEFTSHIFT = 42
SHIFT_L = 0xFFE1
ISO_LEVEL3_SHIFT = 0xFE03
# X11's last keycode, in evdev numbering: XWayland apps receive no key above it.
MAX_EVDEV_KEYCODE = 255 - EVDEV_OFFSET


@dataclass(frozen=True)
class Stroke:
    """An evdev key, and the modifier keys held around it (Shift first)."""

    keycode: int
    modifiers: tuple[int, ...] = ()


class CharStrokes(Protocol):
    """The stroke of each character; InputError naming every one without, before any is typed."""

    def strokes(self, chars: Iterable[str]) -> dict[str, Stroke]: ...

    def close(self) -> None:
        """Let go of the connection to the compositor, if any."""
        ...


class UsStrokes:
    """The US layout's keys, assumed where the desktop's layout could not be read (`why`)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def close(self) -> None:
        pass

    def strokes(self, chars: Iterable[str]) -> dict[str, Stroke]:
        found: dict[str, Stroke] = {}
        missing: list[str] = []
        for char in dict.fromkeys(chars):
            us = US_CHARACTERS.get(char)
            if us is None:
                missing.append(char)
            else:
                code, shift = us
                found[char] = Stroke(code, (KEY_LEFTSHIFT,) if shift else ())
        if missing:
            raise refusal(
                f"the uinput route types keycodes, which the desktop reads with its keyboard "
                f"layout; holodesk could not read that layout ({self.why}), so it assumes US",
                [("the US layout has no key for", missing)],
                "run holodesk inside the Wayland session (WAYLAND_DISPLAY set), so it reads the "
                f"real layout; or {ADD_LAYOUT_FIX}",
            )
        return found


class KeymapStrokes:
    """Strokes from the compositor's keymap (`keymap`: the one now)."""

    def __init__(
        self, keymap: Callable[[], XkbKeymap], on_close: Callable[[], None] | None = None
    ) -> None:
        self._keymap = keymap
        self._on_close = on_close
        self._table: tuple[XkbKeymap, dict[str, Stroke]] | None = None

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    def strokes(self, chars: Iterable[str]) -> dict[str, Stroke]:
        keymap = self._keymap()
        table = self._strokes_of(keymap)
        found: dict[str, Stroke] = {}
        missing: list[str] = []
        for char in dict.fromkeys(chars):
            stroke = table.get(char)
            if stroke is None:
                missing.append(char)
            else:
                found[char] = stroke
        if missing:
            raise _refusal(keymap, missing)
        return found

    def _strokes_of(self, keymap: XkbKeymap) -> dict[str, Stroke]:
        """Every character's first stroke that types it in every layout."""
        if self._table is not None and self._table[0] is keymap:
            return self._table[1]
        per_layout = [_layout_strokes(keymap, layout) for layout in range(len(keymap.layouts))]
        table: dict[str, Stroke] = {}
        for char, strokes in per_layout[0].items():
            common = [
                s for s in strokes if all(s in other.get(char, ()) for other in per_layout[1:])
            ]
            if common:
                table[char] = common[0]
        self._table = (keymap, table)
        return table


def _refusal(keymap: XkbKeymap, missing: list[str]) -> InputError:
    layouts = ", ".join(keymap.layouts)
    head = "the uinput route types keycodes, which the desktop reads with its active layout"
    if len(keymap.layouts) > 1:
        return refusal(
            f"{head}; holodesk cannot see which of its layouts ({layouts}) is active",
            [("not all of them have a key (one X11 apps receive) for", missing)],
            f"{ADD_LAYOUT_FIX}; with several layouts, each must have them (or keep only one)",
        )
    return refusal(
        f"{head} ({layouts})",
        [("that layout has no key (one X11 apps receive) for", missing)],
        ADD_LAYOUT_FIX,
    )


def _layout_strokes(keymap: XkbKeymap, layout: int) -> dict[str, list[Stroke]]:
    """Each character one layout types, with every stroke that types it: first those
    with no modifier or Shift, then those with AltGr, each in keycode order."""
    shift = _modifier_key(keymap, layout, SHIFT_L, prefer=50)  # evdev KEY_LEFTSHIFT
    level3 = _modifier_key(keymap, layout, ISO_LEVEL3_SHIFT, prefer=108)  # KEY_RIGHTALT
    plain: list[tuple[int, ...]] = [()] + ([(shift,)] if shift is not None else [])
    altgr: list[tuple[int, ...]] = []
    if level3 is not None:
        altgr = [(level3,)] + ([(shift, level3)] if shift is not None else [])
    last = min(keymap.max_keycode, MAX_EVDEV_KEYCODE + EVDEV_OFFSET)
    keycodes = [k for k in range(keymap.min_keycode, last + 1) if keymap.levels(k, layout)]
    found: dict[str, list[Stroke]] = {}
    for combos in (plain, altgr):
        for keycode in keycodes:
            for held in combos:
                char = keymap.typed(keycode, layout, held).char
                # Control characters (Return's "\r", Tab's "\t") are named keys, not text.
                if char is None or unicodedata.category(char) == "Cc":
                    continue
                stroke = Stroke(keycode - EVDEV_OFFSET, tuple(m - EVDEV_OFFSET for m in held))
                found.setdefault(char, []).append(stroke)
    return found


def _modifier_key(keymap: XkbKeymap, layout: int, keysym: int, prefer: int) -> int | None:
    """A key (xkb keycode) whose first level is `keysym`, in X11's reach: `prefer` (the
    usual physical key) when it is one, else the first."""
    last = min(keymap.max_keycode, MAX_EVDEV_KEYCODE + EVDEV_OFFSET)
    keys = [
        k
        for k in range(keymap.min_keycode, last + 1)
        if keymap.levels(k, layout) and keymap.keysyms(k, layout, 0) == (keysym,)
    ]
    return prefer if prefer in keys else (keys[0] if keys else None)


def uinput_strokes(environ: Mapping[str, str] | None = None) -> CharStrokes:
    """Strokes from the keymap of `environ`'s compositor (default this process's
    WAYLAND_DISPLAY), or the US layout's where it cannot be read (said in the log
    and in every refusal). Ask once the uinput keyboard exists: a compositor
    without a keyboard has no keymap to give."""
    env = os.environ if environ is None else environ
    try:
        seat = SeatKeymap.open(env)
    except KeymapUnknownError as error:
        log.warning("the keyboard layout is unknown (%s): the uinput route assumes US", error)
        return UsStrokes(str(error))
    return KeymapStrokes(seat.current, on_close=seat.close)
