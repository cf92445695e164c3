"""Input as DevTools input events, in the page's CSS pixels.

Coordinates arrive in physical pixels (the frame the model saw is the screenshot,
one pixel per physical pixel) and go to the page as the CSS pixel that holds the
centre of that physical pixel: floor((p + 0.5) / scale), a whole number. With
scale 2, physical pixels 200 and 201 both land on CSS pixel 100 and 199 on 99.
Whole numbers because Chromium hit-tests a fractional position such as 99.5
against the pixel after it too, while the event reports x = 99: an element
one CSS pixel wide would get clicks the model never aimed at it.

A real OS decides that a press is a double or triple click; DevTools must be told.
So, like the OS, this driver counts clicks (holodesk.platform.clicks: a press of
the same button within DOUBLE_CLICK_S of the previous release and 4 CSS px of its
press continues the series) and sends that count with the press and its release:
`click(count=2)` reaches the page as detail 1, then 2, and a dblclick, however
long the machine takes between its presses.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.clicks import ClickCounter
from holodesk.platform.text import KeyPress, TextRun, chunk_text, plan_text
from holodesk.platform.web.keys import MODIFIER_BITS, key_definition, modifier_bit
from holodesk.platform.web.page import WebPage

DOUBLE_CLICK_S = 0.5
# One wheel notch, in CSS px: what Chromium scrolls per notch on Windows and the
# ±100 deltaY pages see from most wheels. The page gets one wheel event per notch.
WHEEL_NOTCH_PX = 100

# Input.dispatchMouseEvent's button names: the contract's own.
_BUTTON_NAMES = {button: button.value for button in MouseButton}
# MouseEvent.buttons bits (the page sees back/forward as button 3/4, buttons 8/16)
_BUTTON_BITS = {
    MouseButton.LEFT: 1,
    MouseButton.RIGHT: 2,
    MouseButton.MIDDLE: 4,
    MouseButton.BACK: 8,
    MouseButton.FORWARD: 16,
}
_TEXT_BLOCKING = MODIFIER_BITS["ctrl"] | MODIFIER_BITS["alt"] | MODIFIER_BITS["meta"]


class WebInput(InputDriver):
    """Mouse, wheel and keys for one page; text through Input.insertText."""

    def __init__(self, page: WebPage, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._page = page
        self._scale = page.device_scale_factor
        self._bounds = page.display.bounds
        self._lock = threading.RLock()
        self._cursor = (0, 0)
        self._buttons: list[MouseButton] = []
        self._keys_down: set[str] = set()
        self._modifiers = 0
        self._clicks = ClickCounter(lambda: DOUBLE_CLICK_S, clock)

    # -- pointer -------------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        if not self._bounds.contains(x, y):
            raise ValueError(f"point ({x}, {y}) is outside the page's viewport {self._bounds}")
        with self._lock:
            self._cursor = (x, y)
            pressed = self._buttons[0] if self._buttons else None
            self._page.dispatch_mouse(
                self._mouse_event("mouseMoved", _BUTTON_NAMES[pressed] if pressed else "none")
            )

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            if down:
                count = self._clicks.press(button, *self._css(*self._cursor))
                if button not in self._buttons:
                    self._buttons.append(button)
                event = self._mouse_event("mousePressed", _BUTTON_NAMES[button], count)
            else:
                count = self._clicks.release(button)
                if button in self._buttons:
                    self._buttons.remove(button)
                event = self._mouse_event("mouseReleased", _BUTTON_NAMES[button], count)
            self._page.dispatch_mouse(event)

    @contextlib.contextmanager
    def _click_series(self) -> Iterator[None]:
        # A click of count n is one series: counts 1..n, however long it takes.
        with self._lock, self._clicks.series():
            yield

    def _scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            # Vertical notches first, then horizontal, one event per notch.
            notches = [(0, 1 if dy > 0 else -1)] * abs(dy) + [(1 if dx > 0 else -1, 0)] * abs(dx)
            for step_x, step_y in notches:
                event = self._mouse_event("mouseWheel", "none")
                event["deltaX"] = step_x * WHEEL_NOTCH_PX
                event["deltaY"] = step_y * WHEEL_NOTCH_PX
                self._page.dispatch_mouse(event)
                # One wheel event per notch, handled before the next (or the action
                # returns): Chromium would otherwise merge them, or deliver late.
                self._page.settle()

    def cursor_position(self) -> tuple[int, int]:
        with self._lock:
            return self._cursor

    def _css(self, x: int, y: int) -> tuple[int, int]:
        return math.floor((x + 0.5) / self._scale), math.floor((y + 0.5) / self._scale)

    def _mouse_event(self, kind: str, button: str, count: int = 0) -> dict[str, Any]:
        x, y = self._css(*self._cursor)
        event: dict[str, Any] = {
            "type": kind,
            "x": x,
            "y": y,
            "modifiers": self._modifiers,
            "button": button,
            "buttons": sum(_BUTTON_BITS[b] for b in self._buttons),
        }
        if count:
            event["clickCount"] = count
        return event

    # -- keyboard --------------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if down:
                repeat = key in self._keys_down
                self._keys_down.add(key)
            else:
                repeat = False
                self._keys_down.discard(key)
            # From the keys down: a modifier's own keydown already reports it held, as
            # from a keyboard, and ctrl_r still holds Ctrl after ctrl_l is released.
            self._modifiers = functools.reduce(operator.or_, map(modifier_bit, self._keys_down), 0)
            definition = key_definition(
                key, shift_held=bool(self._modifiers & MODIFIER_BITS["shift"])
            )
            # Ctrl, Alt or Meta make a key a shortcut, which types nothing.
            text = definition.text if down and not self._modifiers & _TEXT_BLOCKING else ""
            event: dict[str, Any] = {
                "type": ("keyDown" if text else "rawKeyDown") if down else "keyUp",
                "key": definition.key,
                "code": definition.code,
                "windowsVirtualKeyCode": definition.key_code,
                "nativeVirtualKeyCode": definition.key_code,
                "location": definition.location,
                "isKeypad": definition.keypad,
                "modifiers": self._modifiers,
                "autoRepeat": repeat,
            }
            if text:
                event["text"] = text
                event["unmodifiedText"] = text
            self._page.dispatch_key(event)

    def type_text(self, text: str) -> None:
        steps = plan_text(text)  # refuses untypeable characters before anything is sent
        with self._lock:
            for step in self._checked(steps):
                if isinstance(step, TextRun):
                    # In bounded pieces, the stop signal checked before each.
                    for piece in self._checked(chunk_text(step.text)):
                        self._page.insert_text(piece)
                elif isinstance(step, KeyPress):
                    # Line breaks and tabs as their keys: Enter submits, Tab moves focus.
                    self._key(step.key, True)
                    self._key(step.key, False)
