"""Input injection through the XTEST extension."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from Xlib import X
from Xlib import error as xerror
from Xlib.ext import xtest

from holodesk.platform.base import InputDriver, MouseButton, Region
from holodesk.platform.errors import InputError, InputInterruptedError
from holodesk.platform.keys import holds
from holodesk.platform.text import TEXT_CHUNK_CHARS
from holodesk.platform.x11.keymap import Keymap, Stroke
from holodesk.platform.x11.keysyms import (
    CAPS_LOCK_KEYSYM,
    KEYPAD_KEYSYMS,
    SHIFT_KEYSYM,
    keysym_for_char,
    keysym_for_key,
)

log = logging.getLogger(__name__)

BUTTON_NUMBERS: dict[MouseButton, int] = {
    MouseButton.LEFT: 1,
    MouseButton.MIDDLE: 2,
    MouseButton.RIGHT: 3,
    # Buttons 8 and 9 are back and forward by X convention (evdev BTN_SIDE/BTN_EXTRA).
    MouseButton.BACK: 8,
    MouseButton.FORWARD: 9,
}
# X11 has no wheel events: each notch is a click of button 4-7.
WHEEL_UP, WHEEL_DOWN, WHEEL_LEFT, WHEEL_RIGHT = 4, 5, 6, 7

DEFAULT_SETTLE_S = 0.1
DEFAULT_LINGER_S = 1.0


class X11Input(InputDriver):
    """XTEST input on one X display connection (owned by this driver).

    Characters without a key are typed through temporary bindings (see
    `keymap`), and X clients learn of a binding asynchronously, each its own
    way. Some translate a key event as soon as they read it but refresh their
    keymap only when they dispatch the MappingNotify, so key events wait
    `settle_s` after the bindings they need. Others re-read the mapping lazily,
    when they handle the key event, so a binding stays for `linger_s` after its
    last use (restored by a timer, or reused if typed again) and is never
    changed sooner. No client reports when it has caught up, hence the delays;
    text whose characters all have keys, or are still bound, never waits.

    Text goes in chunks of at most TEXT_CHUNK_CHARS characters, each flushed to
    the server before the next is queued, with the stop signal checked between
    them and the delays slept on it: a stop cuts typing off after the chunk in
    flight, and the cost stays linear in the text (python-xlib's send buffer,
    grown by a whole text, is re-sliced on every partial socket write).
    """

    def __init__(
        self,
        display: Any,
        settle_s: float = DEFAULT_SETTLE_S,
        linger_s: float = DEFAULT_LINGER_S,
    ) -> None:
        super().__init__()
        if settle_s < 0 or linger_s < 0:
            raise ValueError(f"delays cannot be negative: {settle_s=}, {linger_s=}")
        self._display = display
        self._root = display.screen().root
        self._settle_s = settle_s
        self._linger_s = linger_s
        self._keymap = Keymap(display)
        # key name -> (stroke pressed, whether we pressed Shift for it)
        self._pressed: dict[str, tuple[Stroke, bool]] = {}
        self._errors: list[str] = []
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._closed = False
        display.set_error_handler(self._on_error)

    # -- pointer -------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        with self._lock:
            screen = self._screen_region()
            if not screen.contains(x, y):
                raise ValueError(f"point ({x}, {y}) is outside the X screen {screen}")
            xtest.fake_input(self._display, X.MotionNotify, x=x, y=y, root=self._root)

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            event = X.ButtonPress if down else X.ButtonRelease
            xtest.fake_input(self._display, event, BUTTON_NUMBERS[button])

    def _scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            for number, notches in (
                (WHEEL_DOWN if dy > 0 else WHEEL_UP, abs(dy)),
                (WHEEL_RIGHT if dx > 0 else WHEEL_LEFT, abs(dx)),
            ):
                for _ in range(notches):
                    xtest.fake_input(self._display, X.ButtonPress, number)
                    xtest.fake_input(self._display, X.ButtonRelease, number)

    def cursor_position(self) -> tuple[int, int]:
        with self._lock:
            pointer = self._root.query_pointer()
            return int(pointer.root_x), int(pointer.root_y)

    # -- keyboard ----------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if down:
                self._key_down(key)
            else:
                self._key_up(key)

    def _key_down(self, key: str) -> None:
        if key in self._pressed:
            # Auto-repeat: press the same keycode again, keep the first record.
            held, _ = self._pressed[key]
            self._fake_key(held.keycode, True)
            return
        keysym = keysym_for_key(key)
        self._keymap.refresh()
        stroke = self._keymap.find(keysym)
        if stroke is None or (stroke.shift and keysym in KEYPAD_KEYSYMS):
            # A keypad digit shares its key with a cursor key (KP_0 with KP_Insert):
            # Shift selects it only while Num Lock is off, and adds Shift to its
            # event. On a key of its own it arrives as itself, whatever Num Lock says.
            stroke = self._bind([keysym])[keysym]
        binding = self._keymap.binding(stroke.keycode)
        if binding is not None:
            binding.held += 1
        shift = self._needs_shift(stroke)
        if shift:
            self._fake_key(self._shift_keycode(), True)
        self._fake_key(stroke.keycode, True)
        self._pressed[key] = (stroke, shift)

    def _key_up(self, key: str) -> None:
        record = self._pressed.pop(key, None)
        if record is None:
            # Released without our press (e.g. held before we started): release it anyway.
            self._keymap.refresh()
            found = self._keymap.find(keysym_for_key(key))
            if found is not None:
                self._fake_key(found.keycode, False)
            return
        stroke, shift = record
        self._fake_key(stroke.keycode, False)
        if shift:
            self._fake_key(self._shift_keycode(), False)
        binding = self._keymap.binding(stroke.keycode)
        if binding is not None:
            self._sync()
            binding.held -= 1
            binding.last_used = time.monotonic()
            self._schedule_restore()

    def type_text(self, text: str) -> None:
        # "\r\n" is one line break, one Enter, as in plan_text (the other backends).
        keysyms = [keysym_for_char(char) for char in text.replace("\r\n", "\n")]
        with self._lock:
            self._keymap.refresh()
            # Caps Lock would invert letter case: switch it off around the text.
            caps = self._caps_lock_on()
            if caps:
                self._tap(CAPS_LOCK_KEYSYM)
            try:
                for chunk in self._checked(self._chunks(keysyms)):
                    self._type_chunk(chunk)
            finally:
                if caps:
                    self._tap(CAPS_LOCK_KEYSYM)
                self._sync()
                self._schedule_restore()

    def _caps_lock_on(self) -> bool:
        return bool(self._root.query_pointer().mask & X.LockMask)

    def _tap(self, keysym: int) -> None:
        stroke = self._keymap.find(keysym)
        if stroke is None:
            raise InputError(f"the keyboard mapping has no key for keysym {keysym:#x}")
        self._fake_key(stroke.keycode, True)
        self._fake_key(stroke.keycode, False)

    def _chunks(self, keysyms: list[int]) -> Iterator[list[int]]:
        """Cut text into pieces of at most TEXT_CHUNK_CHARS that each fit the keycodes
        available for binding.

        Lazy on purpose: each piece is measured against the mapping as the
        previous pieces left it.
        """
        start = 0
        while start < len(keysyms):
            capacity = len(self._keymap.bindable())
            needing: set[int] = set()
            end = start
            while end < len(keysyms) and end - start < TEXT_CHUNK_CHARS:
                keysym = keysyms[end]
                stroke = self._keymap.find(keysym)
                # A keysym on one of our bindings also occupies a bindable keycode.
                if stroke is None or self._keymap.binding(stroke.keycode) is not None:
                    if keysym not in needing and len(needing) == capacity:
                        break
                    needing.add(keysym)
                end += 1
            if end == start:
                raise InputError("the keyboard mapping has no spare keycode to bind a character to")
            yield keysyms[start:end]
            start = end

    def _type_chunk(self, keysyms: list[int]) -> None:
        in_use = {s.keycode for k in keysyms if (s := self._keymap.find(k)) is not None}
        missing = list(dict.fromkeys(k for k in keysyms if self._keymap.find(k) is None))
        strokes = self._bind(missing, exclude=in_use) if missing else {}
        shift_keycode = self._shift_keycode()
        for keysym in keysyms:
            stroke = strokes.get(keysym) or self._keymap.find(keysym)
            if stroke is None:  # only if the mapping changed under us
                raise InputError(f"no key types keysym {keysym:#x}")
            shift = self._needs_shift(stroke)
            if shift:
                self._fake_key(shift_keycode, True)
            self._fake_key(stroke.keycode, True)
            self._fake_key(stroke.keycode, False)
            if shift:
                self._fake_key(shift_keycode, False)
        # Linger counts from when the server has the events, not from when we queued them.
        self._sync()
        now = time.monotonic()
        for keysym in keysyms:
            stroke = strokes.get(keysym) or self._keymap.find(keysym)
            binding = self._keymap.binding(stroke.keycode) if stroke is not None else None
            if binding is not None:
                binding.last_used = now

    def _bind(self, keysyms: list[int], exclude: set[int] | None = None) -> dict[int, Stroke]:
        """Bind keysyms to spare (or our least recently used) keycodes, all at once."""
        keycodes = self._keymap.bindable(exclude or ())
        if len(keysyms) > len(keycodes):
            raise InputError(
                f"{len(keysyms)} characters need a temporary key but only "
                f"{len(keycodes)} spare keycodes are free"
            )
        chosen = keycodes[: len(keysyms)]
        # Wait first, bind after: requests queued during a wait would reach
        # clients late, and late is exactly what lingering guards against.
        for keycode in chosen:
            self._wait_out_linger(keycode, interruptible=True)
        strokes: dict[int, Stroke] = {}
        for keysym, keycode in zip(keysyms, chosen, strict=True):
            strokes[keysym] = self._keymap.bind(keycode, keysym, time.monotonic())
        self._sync()
        # Some toolkits (Tk among them) translate a key event when they read it
        # but refresh their keymap only when they dispatch the MappingNotify, so
        # the key events must arrive after every client has caught up.
        try:
            self._pause(self._settle_s)
        except InputInterruptedError:
            self._schedule_restore()  # stopped before using them: undo them in time
            raise
        return strokes

    def _wait_out_linger(self, keycode: int, interruptible: bool = False) -> None:
        """Sleep until `keycode`'s binding may change; while typing, a stop cuts it short."""
        binding = self._keymap.binding(keycode)
        if binding is not None:
            remaining = binding.last_used + self._linger_s - time.monotonic()
            if remaining > 0:
                if interruptible:
                    self._pause(remaining)
                else:
                    time.sleep(remaining)

    def _needs_shift(self, stroke: Stroke) -> bool:
        # Shift already held by this driver (e.g. a chord) selects the level itself.
        return stroke.shift and not holds(self._held_keys, "shift")

    def _shift_keycode(self) -> int:
        stroke = self._keymap.find(SHIFT_KEYSYM)
        if stroke is None:
            raise InputError("the keyboard mapping has no Shift_L key")
        return stroke.keycode

    def _fake_key(self, keycode: int, down: bool) -> None:
        xtest.fake_input(self._display, X.KeyPress if down else X.KeyRelease, keycode)

    # -- restoring the keyboard mapping ---------------------------------------------------
    def _schedule_restore(self) -> None:
        if self._timer is None and not self._closed and self._keymap.bound_keycodes():
            self._timer = threading.Timer(self._linger_s, self._restore_idle)
            self._timer.daemon = True
            self._timer.start()

    def _restore_idle(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
            now = time.monotonic()
            idle = [
                code
                for code in self._keymap.bound_keycodes()
                if (b := self._keymap.binding(code)) is not None
                and not b.held
                and now - b.last_used >= self._linger_s
            ]
            try:
                self._keymap.restore(idle)
                self._sync()
            except Exception:
                log.exception("restoring the keyboard mapping failed")
            self._schedule_restore()

    def restore_keymap(self) -> None:
        """Undo every binding not held down now (waiting out their linger)."""
        with self._lock:
            codes = [
                code
                for code in self._keymap.bound_keycodes()
                if (b := self._keymap.binding(code)) is not None and not b.held
            ]
            for code in codes:
                self._wait_out_linger(code)
            self._keymap.restore(codes)
            self._sync()

    def keymap_rows(self) -> list[tuple[int, ...]]:
        """The server's current keyboard mapping, e.g. to check it was restored."""
        with self._lock:
            self._keymap.refresh()
            return self._keymap.rows()

    # -- plumbing ----------------------------------------------------------------------
    def _sync(self) -> None:
        with self._lock:
            try:
                self._display.sync()
            except (xerror.ConnectionClosedError, OSError) as error:
                raise InputError(f"lost the connection to the X server: {error}") from error
            # Drain MappingNotify and friends: never read, they would pile up.
            while self._display.pending_events():
                self._display.next_event()
            if self._errors:
                errors, self._errors = self._errors, []
                raise InputError(f"the X server rejected input: {'; '.join(errors)}")

    def _on_error(self, error: Any, request: Any = None) -> None:
        self._errors.append(str(error))

    def _screen_region(self) -> Region:
        # Asked each time: RandR can resize the screen while we run.
        geometry = self._root.get_geometry()
        return Region(0, 0, int(geometry.width), int(geometry.height))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                super().close()
            finally:
                try:
                    self.restore_keymap()
                finally:
                    self._closed = True
                    if self._timer is not None:
                        self._timer.cancel()
                    self._display.close()
