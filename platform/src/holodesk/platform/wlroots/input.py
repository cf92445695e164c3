"""Input through a virtual pointer (wlr-virtual-pointer) and a virtual keyboard.

Both are devices of the compositor's seat, so every app, native Wayland or
XWayland, receives their events exactly as a real mouse's and keyboard's.

Pointer motion is absolute over the outputs' logical bounding box, in
1/1024 logical pixel, aimed at the centre of the physical pixel asked for (see
`outputs`), so a click lands on that pixel at any scale, fractional too. Wheel
scrolling goes one notch per frame (axis_discrete), as a mouse wheel sends it.

Keys go as keycodes of our own keymap (`keymap`): named keys and US characters
on their keys, any other character on a spare key bound to its keysym, the
keymap uploaded again when a chunk of text brings characters it lacks. Text is
typed in chunks of TEXT_CHUNK_CHARS characters, each sent and acknowledged by
the compositor (a roundtrip) before the stop signal is checked again.

The modifier state goes with the keys: wlroots keeps none for a virtual keyboard
(its key events do not update the seat's xkb state), so after each key that
changes it we send `modifiers` ourselves, computed from our own keymap. Without
it a native Wayland app sees Ctrl+A as a plain A and a Shift-click as a click
(XWayland's X server tracks its own state, which hid this behind X11 apps).
"""

from __future__ import annotations

import mmap
import os
import time
from typing import Any

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.keys import holds
from holodesk.platform.text import KeyPress, TextStep, chunk_text, plan_text
from holodesk.platform.wayland.buttons import evdev_button
from holodesk.platform.wlroots.connection import VIRTUAL_KEYBOARD, VIRTUAL_POINTER, WlrConnection
from holodesk.platform.wlroots.keymap import LOCK_BIT, Keymap, Stroke

KEYMAP_FORMAT_XKB_V1 = 1
AXIS_VERTICAL = 0
AXIS_HORIZONTAL = 1
AXIS_SOURCE_WHEEL = 0
# What one wheel notch scrolls, in wl_pointer axis units (libinput's 15 degrees).
NOTCH_VALUE = 15.0
_PRESSED, _RELEASED = 1, 0
# How long to wait before an upload that gives keys to other characters.
REBIND_SETTLE_S = 0.2


class WlrInput(InputDriver):
    """A virtual pointer and a virtual keyboard on the compositor's first seat."""

    def __init__(self, connection: WlrConnection) -> None:
        super().__init__()
        self._connection = connection
        self._keymap = Keymap()
        self._down: dict[str, Stroke] = {}  # keys held, with the keycode each went down on
        self._position: tuple[int, int] | None = None
        # Caps Lock as our presses left it: a virtual keyboard has its own lock state
        # in the compositor, so this is exact, not a guess.
        self._caps_locked = False
        # The keycodes down on the wire, and the modifier state last sent for them.
        self._pressed: set[int] = set()
        self._locked_mods = 0
        self._sent_mods = (0, 0)
        self._epoch = time.monotonic()
        with connection.lock:
            seat = connection.bound["wl_seat"]
            self._pointer: Any = connection.bound[VIRTUAL_POINTER].create_virtual_pointer(seat)
            self._keyboard: Any = connection.bound[VIRTUAL_KEYBOARD].create_virtual_keyboard(seat)
            self._upload_keymap()
        connection.roundtrip()

    # -- pointer ----------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        motion = self._connection.layout().pointer_motion(x, y)  # ValueError off every output
        with self._connection.lock:
            self._pointer.motion_absolute(self._now(), *motion)
            self._pointer.frame()
        self._position = (x, y)

    def _button(self, button: MouseButton, down: bool) -> None:
        code = evdev_button(button)
        with self._connection.lock:
            self._pointer.button(self._now(), code, _PRESSED if down else _RELEASED)
            self._pointer.frame()

    def _scroll(self, dx: int, dy: int) -> None:
        with self._connection.lock:
            for axis, amount in ((AXIS_VERTICAL, dy), (AXIS_HORIZONTAL, dx)):
                step = 1 if amount > 0 else -1
                for _ in range(abs(amount)):
                    self._pointer.axis_source(AXIS_SOURCE_WHEEL)
                    self._pointer.axis_discrete(self._now(), axis, NOTCH_VALUE * step, step)
                    self._pointer.frame()

    def cursor_position(self) -> tuple[int, int]:
        """Where this driver last moved the pointer (Wayland lets no client read it)."""
        if self._position is None:
            desktop = self._connection.layout().displays()[0].bounds
            return desktop.x + desktop.width // 2, desktop.y + desktop.height // 2
        return self._position

    # -- keyboard ---------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        if not down:
            stroke = self._down.pop(key, None)
            if stroke is not None:
                self._send_key(stroke.keycode, False)
            return
        stroke = self._down.get(key) or self._stroke_for_key(key)
        self._down[key] = stroke
        self._send_key(stroke.keycode, True)
        if key == "capslock":
            self._caps_locked = not self._caps_locked

    def _stroke_for_key(self, key: str) -> Stroke:
        """A held key's keycode: a named key's own, a character's US key when it
        needs no Shift, else a slot (which types it whatever is held)."""
        if len(key) != 1:
            return Stroke(self._keymap.named(key))
        us = self._keymap.us_stroke(key)
        if us is not None and not us.shift:
            return us
        return Stroke(self._slot_for(key))

    def type_text(self, text: str) -> None:
        """Type `text` exactly: Caps Lock, if our presses turned it on, is switched
        off around it (a letter's key would type the other case) and on again."""
        steps = plan_text(text)  # refuses control characters before anything is typed
        caps = self._caps_locked and "capslock" not in self._down
        if caps:
            self._tap(Stroke(self._keymap.named("capslock")))
        try:
            self._type_steps(steps)
        finally:
            if caps:
                self._tap(Stroke(self._keymap.named("capslock")))
                self._connection.roundtrip()

    def _type_steps(self, steps: list[TextStep]) -> None:
        for step in steps:
            if isinstance(step, KeyPress):
                self._checkpoint()
                self._tap(Stroke(self._keymap.named(step.key)))
                self._connection.roundtrip()
                continue
            for chunk in self._checked(chunk_text(step.text)):
                self._type_chunk(chunk)

    def _type_chunk(self, chunk: str) -> None:
        shift_held = holds(self._held_keys, "shift")
        strokes: list[Stroke | str] = []
        for char in chunk:
            us = self._keymap.us_stroke(char)
            # A US key whose level the held Shift would change goes on a slot instead.
            if us is not None and not (shift_held and not us.shift):
                strokes.append(Stroke(us.keycode, us.shift and not shift_held))
            else:
                strokes.append(char)
        pending = [s for s in strokes if isinstance(s, str)]
        if pending:
            held = [stroke.keycode for stroke in self._down.values()]
            if self._keymap.would_rebind(pending):
                # An XWayland app's Xlib takes a new keymap in as soon as it reads it,
                # ahead of key events still queued: let the app handle the keys sent
                # with the old binding before a key means another character.
                self._connection.roundtrip()
                self._pause(REBIND_SETTLE_S)
            if self._keymap.bind(pending, keep=held):
                with self._connection.lock:
                    self._upload_keymap()
        for item in strokes:
            if isinstance(item, str):
                code = self._keymap.slot(item)
                assert code is not None  # bound just above
                item = Stroke(code)
            self._tap(item)
        self._connection.roundtrip()

    def _slot_for(self, char: str) -> int:
        code = self._keymap.slot(char)
        if code is None:
            held = [stroke.keycode for stroke in self._down.values()]
            self._keymap.bind([char], keep=held)
            with self._connection.lock:
                self._upload_keymap()
            code = self._keymap.slot(char)
            assert code is not None
        return code

    def _tap(self, stroke: Stroke) -> None:
        shift = self._keymap.named("shift_l")
        if stroke.shift:
            self._send_key(shift, True)
        self._send_key(stroke.keycode, True)
        self._send_key(stroke.keycode, False)
        if stroke.shift:
            self._send_key(shift, False)

    def _send_key(self, keycode: int, down: bool) -> None:
        with self._connection.lock:
            self._keyboard.key(self._now(), keycode, _PRESSED if down else _RELEASED)
            self._update_modifiers(keycode, down)

    def _update_modifiers(self, keycode: int, down: bool) -> None:
        """Send the modifier state when this key changed it (caller holds the lock).

        Depressed: the real modifiers of the keys held. Locked: Caps Lock, toggled
        by each press, as the keymap's LockMods action does it."""
        bit = self._keymap.modifier_bit(keycode)
        if down:
            if bit == LOCK_BIT and keycode not in self._pressed:
                self._locked_mods ^= LOCK_BIT
            self._pressed.add(keycode)
        else:
            self._pressed.discard(keycode)
        depressed = 0
        for code in self._pressed:
            depressed |= self._keymap.modifier_bit(code)
        state = (depressed, self._locked_mods)
        if state != self._sent_mods:
            self._keyboard.modifiers(depressed, 0, self._locked_mods, 0)
            self._sent_mods = state

    def _upload_keymap(self) -> None:
        """Hand the compositor the keymap, through a sealed-size memfd (caller holds the lock)."""
        data = self._keymap.text().encode() + b"\0"
        fd = os.memfd_create("holodesk-keymap", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, len(data))
            with mmap.mmap(fd, len(data)) as memory:
                memory.write(data)
            self._keyboard.keymap(KEYMAP_FORMAT_XKB_V1, fd, len(data))
            # The fd is duplicated into the message only when it is sent.
            self._connection.display.flush()
        finally:
            os.close(fd)

    # -- housekeeping -----------------------------------------------------------------
    def _sync(self) -> None:
        self._connection.roundtrip()

    def _now(self) -> int:
        return int((time.monotonic() - self._epoch) * 1000) & 0xFFFFFFFF

    def close(self) -> None:
        try:
            super().close()
        finally:
            with self._connection.lock:
                try:
                    self._pointer.destroy()
                    self._keyboard.destroy()
                    self._connection.display.flush()
                except Exception as error:  # the connection is already gone
                    raise InputError(f"closing the virtual devices failed: {error}") from error
