"""Input over VNC: RFB pointer events (a button mask) and key events (keysyms)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.keys import holds
from holodesk.platform.text import TEXT_CHUNK_CHARS
from holodesk.platform.vnc.client import RfbClient
from holodesk.platform.vnc.connection import VncLink
from holodesk.platform.vnc.handshake import ServerInfo
from holodesk.platform.vnc.keys import (
    BOOK,
    NAMED_KEYSYMS,
    KeysymSupport,
    beyond_ascii,
    keypad_refusal,
    keysym_for_char,
    keysym_for_key,
    support_for,
    validate_budget,
)

T = TypeVar("T")

# RFB's button mask: bit n is X button n+1; wheel notches are clicks of 4-7, and
# back and forward are buttons 8 and 9 (see protocol.pointer_event for 9).
BUTTON_BITS: dict[MouseButton, int] = {
    MouseButton.LEFT: 1 << 0,
    MouseButton.MIDDLE: 1 << 1,
    MouseButton.RIGHT: 1 << 2,
    MouseButton.BACK: 1 << 7,
    MouseButton.FORWARD: 1 << 8,
}
_SIDE_BUTTON_FIX = (
    "(fix: run TigerVNC 1.15 or later, which has ExtendedMouseButtons; or press "
    "alt+left / alt+right, a browser's keys for back and forward)"
)
WHEEL_UP, WHEEL_DOWN, WHEEL_LEFT, WHEEL_RIGHT = (1 << 3, 1 << 4, 1 << 5, 1 << 6)
SHIFT = NAMED_KEYSYMS["shift"]
CAPS_LOCK_TAP = [(NAMED_KEYSYMS["capslock"], True), (NAMED_KEYSYMS["capslock"], False)]
DEFAULT_SETTLE_S = 0.1  # after a character's first use on a server (see keys)
# How long a chunk of typed text may take the server to acknowledge (see _send_chunk).
ACK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class _Stroke:
    """One character: its keysym, whether Shift goes around it, whether it is released."""

    char: str
    keysym: int
    shift: bool
    release: bool = True

    def events(self) -> list[tuple[int, bool]]:
        events = [(SHIFT, True)] if self.shift else []
        events.append((self.keysym, True))
        if self.release:
            events.append((self.keysym, False))
            if self.shift:
                events.append((SHIFT, False))
        return events


class VncInput(InputDriver):
    """Pointer and keyboard of a remote desktop.

    RFB never reports the pointer, so its position is the one this driver
    last sent (the framebuffer's centre before the first move). Text goes as keysyms, one press
    and release per character, one write per TEXT_CHUNK_CHARS characters with the
    stop signal checked before each; characters the server would drop raise
    InputError before any is sent (see `holodesk.platform.vnc.keys`).
    """

    def __init__(
        self,
        link: VncLink,
        unicode_keysyms: bool | None = None,
        keysym_budget: int | str | None = "auto",
        settle_s: float = DEFAULT_SETTLE_S,
    ) -> None:
        super().__init__()
        if settle_s < 0:
            raise ValueError(f"settle_s cannot be negative: {settle_s}")
        validate_budget(keysym_budget)
        self._link = link
        self._unicode_keysyms = unicode_keysyms
        self._keysym_budget = keysym_budget
        self._settle_s = settle_s
        self._lock = threading.Lock()  # the mask and position, as a safety thread may release
        self._mask = 0
        # RFB never says where the pointer is: until our first move, assume the
        # centre, the one place no fail-safe corner or edge reads anything into.
        width, height = self._run(lambda client: client.size, "reading the remote desktop's size")
        self._cursor = (width // 2, height // 2)
        # key name -> (keysym sent, whether we pressed Shift for it)
        self._pressed: dict[str, tuple[int, bool]] = {}
        # Whether this driver's own Caps Lock presses left it on (see type_text).
        self._caps_lock_on = False

    # -- pointer -------------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        with self._lock:
            width, height = self._run(lambda client: client.size, "moving the pointer")
            if not (0 <= x < width and 0 <= y < height):
                raise ValueError(
                    f"point ({x}, {y}) is outside the remote {width}x{height} framebuffer"
                )
            self._pointer(x, y, self._mask, "moving the pointer")
            self._cursor = (x, y)

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            bit = BUTTON_BITS[button]
            mask = self._mask | bit if down else self._mask & ~bit
            x, y = self._cursor

            def send(client: RfbClient) -> None:
                refusal = side_button_refusal(client.info, button) if down else None
                if refusal is not None:
                    raise InputError(f"{refusal} {_SIDE_BUTTON_FIX}")
                client.pointer(x, y, mask)

            action = "pressing" if down else "releasing"
            self._run(send, f"{action} the {button.value} button")
            self._mask = mask

    def _scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            x, y = self._cursor
            for bit, notches in (
                (WHEEL_DOWN if dy > 0 else WHEEL_UP, abs(dy)),
                (WHEEL_RIGHT if dx > 0 else WHEEL_LEFT, abs(dx)),
            ):
                for _ in range(notches):
                    self._pointer(x, y, self._mask | bit, "scrolling")
                    self._pointer(x, y, self._mask, "scrolling")

    def _pointer(self, x: int, y: int, mask: int, what: str) -> None:
        self._run(lambda client: client.pointer(x, y, mask), what)

    def cursor_position(self) -> tuple[int, int]:
        return self._cursor

    # -- keyboard ------------------------------------------------------------------------
    # A keysym names a character, not a key, so the server picks the modifiers
    # that produce it. For a capital letter pressed without Shift, TigerVNC
    # toggles Caps Lock rather than pressing Shift, and leaves it on. So we
    # press Shift around capitals ourselves, as a viewer whose user typed them
    # would; and a letter pressed while we hold Shift goes as its capital, as a
    # keyboard would make it.
    def _key(self, key: str, down: bool) -> None:
        if not down:
            keysym, shifted = self._pressed.pop(key, (keysym_for_key(key), False))
            release = [(keysym, False)] + ([(SHIFT, False)] if shifted else [])
            self._run(lambda client: client.keys(release), f"releasing the key {key!r}")
            return
        if key == "capslock" and key not in self._pressed:
            # RFB never reports the lock state; this driver knows only its own presses.
            self._caps_lock_on = not self._caps_lock_on
        if key in self._pressed:  # auto-repeat: the same keysym again
            repeat = [(self._pressed[key][0], True)]
            self._run(lambda client: client.keys(repeat), f"pressing the key {key!r}")
            return
        shift_held = holds(self._held_keys, "shift")
        char = key if len(key) == 1 else ""
        if shift_held and _capital(char.upper()):
            char = char.upper()
        keysym = keysym_for_key(char or key)
        add_shift = not shift_held and _capital(char)
        press = [_Stroke(char, keysym, add_shift, release=False)] if char else []
        events = ([(SHIFT, True)] if add_shift else []) + [(keysym, True)]

        def send(client: RfbClient) -> None:
            refusal = keypad_refusal(client.info, key)
            if refusal is not None:
                raise InputError(refusal)
            if press:
                self._send_strokes(client, press)
            else:
                client.keys(events)

        self._run(send, f"pressing the key {key!r}")
        self._pressed[key] = (keysym, add_shift)

    def type_text(self, text: str) -> None:
        text = text.replace("\r\n", "\n")  # one line break, one Enter (as plan_text)
        keysyms = [keysym_for_char(char) for char in text]  # control characters raise here
        shift_held = holds(self._held_keys, "shift")
        strokes = [
            _Stroke(char, keysym, not shift_held and _capital(char))
            for char, keysym in zip(text, keysyms, strict=True)
        ]
        caps = self._caps_lock_on

        def send(client: RfbClient) -> None:
            # Some servers (x11vnc) press a letter's key as it is, so a Caps Lock on
            # would invert its case: switched off around the text when we know it is on.
            if caps:
                client.keys(CAPS_LOCK_TAP)
            try:
                self._send_strokes(client, strokes)
            finally:
                if caps:
                    client.keys(CAPS_LOCK_TAP)

        if strokes:
            self._run(send, f"typing {len(text)} characters")

    def _send_strokes(self, client: RfbClient, strokes: list[_Stroke]) -> None:
        """Check the server can type them all, then send, pausing after new bindings."""
        address = client.info.address
        bound = BOOK.bound(address)
        self._support(client).check([s.char for s in strokes], client.info, bound)
        batch: list[tuple[int, bool]] = []
        in_batch = 0
        shift_held = holds(self._held_keys, "shift")
        for stroke in strokes:
            if in_batch == TEXT_CHUNK_CHARS:
                self._send_chunk(client, batch)
                batch, in_batch = [], 0
            new = beyond_ascii(stroke.char) and stroke.keysym not in bound
            if new and not (shift_held or stroke.shift):
                # Xvnc binds on its master keyboard, which takes the keymap of the
                # device that last typed: a key event before the binding makes that
                # switch happen first, else the switch wipes the binding just made.
                batch += [(SHIFT, True), (SHIFT, False)]
            batch += stroke.events()
            in_batch += 1
            if new:
                # First use on this server: it binds a keycode now; let apps catch up.
                self._send_chunk(client, batch)
                batch, in_batch = [], 0
                BOOK.record(address, stroke.keysym)
                bound.add(stroke.keysym)
                self._pause(self._settle_s)
        if batch:
            self._send_chunk(client, batch)

    def _send_chunk(self, client: RfbClient, events: list[tuple[int, bool]]) -> None:
        """Send one chunk of key events, unless stopped, and wait until the server has them.

        RFB acknowledges no input, and a socket takes a whole text at once: the server
        would go on typing it long after a stop. A 1-pixel update request, which the
        server answers after the messages before it, is the receipt, so the driver is
        never more than one chunk ahead of the desktop.
        """
        self._checkpoint()
        client.keys(events)
        client.refresh(0, 0, 1, 1, ACK_TIMEOUT_S, probe=True)

    def _support(self, client: RfbClient) -> KeysymSupport:
        # Per call: a reconnect may have reached a different server.
        return support_for(client.info, self._unicode_keysyms, self._keysym_budget)

    def _run(self, action: Callable[[RfbClient], T], what: str) -> T:
        return self._link.run(action, InputError, what)


def side_button_refusal(server: ServerInfo, button: MouseButton) -> str | None:
    """Why `server` cannot take `button`, or None when it can.

    The RFB mask byte has room for buttons 1-8 only; 9 (forward) needs the
    ExtendedMouseButtons pseudo-encoding. Button 8 (back) fits, but servers
    that acknowledge QEMU key events without ExtendedMouseButtons are TigerVNC
    before 1.15 (whose Xvnc drives 7 buttons) or QEMU (5): both drop it without
    a word, so it is refused here rather than lost. Others (libvncserver's
    x11vnc) get bit 7, as the RFB specification defines it.
    """
    if server.extended_mouse_buttons:
        return None
    if button is MouseButton.FORWARD:
        return (
            f"{server.describe()} cannot take the forward button (X button 9): RFB's "
            "button mask is one byte, for buttons 1-8, and button 9 needs the "
            "ExtendedMouseButtons pseudo-encoding (-316), which this server did not "
            "acknowledge"
        )
    if button is MouseButton.BACK and server.qemu_key_events:
        return (
            f"{server.describe()} cannot take the back button (X button 8): it "
            "acknowledged QEMU key events but not ExtendedMouseButtons (-316), so it is "
            "TigerVNC older than 1.15 or QEMU, which drive buttons 1-7 only and would "
            "drop it without a word"
        )
    return None


def _capital(char: str) -> bool:
    """A capital letter with a small one (what Shift or Caps Lock makes)."""
    return len(char) == 1 and char != char.lower() and len(char.lower()) == 1
