"""Input injection through Quartz events (pure logic over a `QuartzApi`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.clicks import ClickCounter
from holodesk.platform.errors import InputError
from holodesk.platform.keys import is_modifier, side_neutral
from holodesk.platform.macos import cg
from holodesk.platform.macos.api import KeyEvent, MouseEvent, QuartzApi, ScrollEvent
from holodesk.platform.macos.geometry import DesktopMap
from holodesk.platform.macos.keycodes import (
    NAMED_KEYCODES,
    ansi_layout,
    hardware_flags,
    keycode_for_named_key,
)
from holodesk.platform.text import KeyPress, chunk_utf16, plan_text

# macOS reads at most 20 UTF-16 units from one event's Unicode string.
MAX_TEXT_UNITS = 20
# The keycode Unicode text events carry; their string replaces what it would type.
TEXT_KEYCODE = 0

_BUTTONS: dict[MouseButton, int] = {
    MouseButton.LEFT: cg.BUTTON_LEFT,
    MouseButton.RIGHT: cg.BUTTON_RIGHT,
    MouseButton.MIDDLE: cg.BUTTON_CENTER,
    MouseButton.BACK: cg.BUTTON_BACK,
    MouseButton.FORWARD: cg.BUTTON_FORWARD,
}
# button -> (down, up, dragged) event types
_TYPES: dict[int, tuple[int, int, int]] = {
    cg.BUTTON_LEFT: (cg.LEFT_MOUSE_DOWN, cg.LEFT_MOUSE_UP, cg.LEFT_MOUSE_DRAGGED),
    cg.BUTTON_RIGHT: (cg.RIGHT_MOUSE_DOWN, cg.RIGHT_MOUSE_UP, cg.RIGHT_MOUSE_DRAGGED),
    cg.BUTTON_CENTER: (cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP, cg.OTHER_MOUSE_DRAGGED),
    cg.BUTTON_BACK: (cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP, cg.OTHER_MOUSE_DRAGGED),
    cg.BUTTON_FORWARD: (cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP, cg.OTHER_MOUSE_DRAGGED),
}


@dataclass(frozen=True)
class _Stroke:
    """How one key is pressed: its keycode, the flags it adds to the held ones, whether
    Shift must be pressed around it, or the text a Unicode event carries instead."""

    keycode: int
    flags: int
    shift: bool = False
    text: str = ""


class QuartzInput(InputDriver):
    """CGEvent posting: pixel targets mapped to points per display, flags for held
    modifiers on every event, click state for multi-clicks, dragged events while a
    button is held, and text as Unicode strings of at most 20 UTF-16 units.
    """

    def __init__(
        self,
        api: QuartzApi,
        text_chunk_units: int = MAX_TEXT_UNITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        if not 2 <= text_chunk_units <= MAX_TEXT_UNITS:
            raise ValueError(
                f"text_chunk_units must be 2 to {MAX_TEXT_UNITS} (macOS reads at most "
                f"{MAX_TEXT_UNITS} per event), not {text_chunk_units}"
            )
        self._api = api
        self._chunk = text_chunk_units
        self._lock = threading.RLock()
        self._clicks = ClickCounter(api.double_click_interval, clock)
        self._layout: Mapping[str, tuple[int, int]] = api.keyboard_layout() or ansi_layout()
        self._flags = 0
        self._modifiers_down: set[str] = set()
        self._buttons: list[int] = []  # Quartz buttons held, in press order
        self._location: tuple[float, float] | None = None  # the last point we posted
        self._pressed: dict[str, _Stroke] = {}

    # -- pointer ---------------------------------------------------------------------
    def _desktop(self) -> DesktopMap:
        return DesktopMap(self._api.displays())

    def _move(self, x: int, y: int) -> None:
        with self._lock:
            point = self._desktop().point_for_pixel(x, y)
            if self._buttons:
                held = self._buttons[0]
                event = MouseEvent(_TYPES[held][2], *point, held, 1, self._flags)
            else:
                event = MouseEvent(cg.MOUSE_MOVED, *point, cg.BUTTON_LEFT, 0, self._flags)
            self._api.post(event)
            self._location = point

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            number = _BUTTONS[button]
            x, y = self._where()
            if down:
                state = self._clicks.press(number, x, y)
                kind = _TYPES[number][0]
            else:
                state = self._clicks.release(number)
                kind = _TYPES[number][1]
            self._api.post(MouseEvent(kind, x, y, number, state, self._flags))
            if down and number not in self._buttons:
                self._buttons.append(number)
            elif not down and number in self._buttons:
                self._buttons.remove(number)

    def _where(self) -> tuple[float, float]:
        if self._location is None:
            self._location = self._api.cursor_location()
        return self._location

    def _scroll(self, dx: int, dy: int) -> None:
        """One two-axis event per notch; Quartz's wheels are positive up and left."""
        with self._lock:
            x, y = self._where()
            for notch in range(max(abs(dx), abs(dy))):
                vertical = -_sign(dy) if notch < abs(dy) else 0
                horizontal = -_sign(dx) if notch < abs(dx) else 0
                self._api.post(ScrollEvent(x, y, vertical, horizontal, self._flags))

    @contextlib.contextmanager
    def _click_series(self) -> Iterator[None]:
        # A click of count n is one series: counts 1..n, however long it takes.
        with self._lock, self._clicks.series():
            yield

    def cursor_position(self) -> tuple[int, int]:
        with self._lock:
            return self._desktop().pixel_for_point(*self._api.cursor_location())

    # -- keyboard ------------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if is_modifier(key):
                self._modifier(key, down)
            elif down:
                held = self._pressed.get(key)
                if held is None:
                    held = self._pressed[key] = self._stroke(key)
                    self._press(held, add_shift=True)
                else:
                    self._press(held, add_shift=False)  # auto-repeat
            else:
                stroke = self._pressed.pop(key, None) or self._stroke(key, add_shift=False)
                self._release(stroke)

    def _modifier(self, key: str, down: bool) -> None:
        """A modifier's own event carries the flags as they are once it is down or up."""
        if down:
            self._modifiers_down.add(key)
        else:
            self._modifiers_down.discard(key)
        # From the modifiers down, so Shift stays set while shift_r is held after
        # shift_l is released; a sided key sets its side-neutral flag, as on a Mac.
        flags = 0
        for held in self._modifiers_down:
            flags |= cg.MODIFIER_FLAGS[side_neutral(held)]
        self._flags = flags
        self._api.post(KeyEvent(NAMED_KEYCODES[key], down, self._flags))

    def _stroke(self, key: str, add_shift: bool = True) -> _Stroke:
        if key in NAMED_KEYCODES:
            return _Stroke(keycode_for_named_key(key), hardware_flags(key))
        if len(key) != 1:
            keycode_for_named_key(key)  # raises the right error (e.g. F21 has no Mac key)
        found = self._layout.get(key)
        if found is None:
            if self._flags:
                held = [name for name, flag in cg.MODIFIER_FLAGS.items() if self._flags & flag]
                raise InputError(
                    f"cannot press {'+'.join([*held, key])}: no key of the keyboard layout "
                    f"types {key!r}, and a Unicode event with modifiers would trigger the "
                    "shortcut of whatever key carries it"
                )
            return _Stroke(TEXT_KEYCODE, 0, text=key)
        keycode, needed = found
        shift = bool(needed & cg.FLAG_SHIFT) and add_shift and not self._flags & cg.FLAG_SHIFT
        return _Stroke(keycode, needed, shift=shift)

    # Flags are read when each event is posted, so a modifier released between a key's
    # press and its release is not resurrected on the release.
    def _press(self, stroke: _Stroke, add_shift: bool) -> None:
        if stroke.text:
            self._api.post(KeyEvent(stroke.keycode, True, 0, stroke.text))
            return
        if stroke.shift and add_shift:
            self._api.post(KeyEvent(NAMED_KEYCODES["shift"], True, self._flags | cg.FLAG_SHIFT))
        self._api.post(KeyEvent(stroke.keycode, True, self._flags | stroke.flags))

    def _release(self, stroke: _Stroke) -> None:
        if stroke.text:
            self._api.post(KeyEvent(stroke.keycode, False, 0, stroke.text))
            return
        self._api.post(KeyEvent(stroke.keycode, False, self._flags | stroke.flags))
        if stroke.shift:
            self._api.post(KeyEvent(NAMED_KEYCODES["shift"], False, self._flags))

    def type_text(self, text: str) -> None:
        steps = plan_text(text)
        with self._lock:
            for step in self._checked(steps):
                if isinstance(step, KeyPress):
                    stroke = self._stroke(step.key)
                    self._press(stroke, add_shift=True)
                    self._release(stroke)
                    continue
                # One event pair per chunk (at most 20 units), the stop signal checked before each.
                for chunk in self._checked(chunk_utf16(step.text, self._chunk)):
                    # No flags: held modifiers would turn text into shortcuts.
                    self._api.post(KeyEvent(TEXT_KEYCODE, True, 0, chunk))
                    self._api.post(KeyEvent(TEXT_KEYCODE, False, 0, chunk))


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)
