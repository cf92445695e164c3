"""A global hotkey on X11: a passive key grab, so the X server sends the chord alone.

Why not a listener that hears every key (pynput's RECORD): it parses each key event
of the desktop in Python, in the process whose typist makes most of them, so on a
busy machine a long type action's own keys queued ahead of the emergency stop and
it came late (2,752 of 4,992 keys reached the app after it); and it marked itself
ready before the server recorded, so a chord pressed at once went unheard. A grab is
in place once the server has answered the request that follows it, and then the
chord is the only key event that comes.

The chord's key goes to the grab, not to the focused window: a stop is not input.
XTEST input activates a grab as a keyboard does, so xdotool can press it (tests),
and so can a session's own typist. The chord fires whatever other modifiers are
down (Num Lock, Caps Lock, a Shift the typist holds): every combination of the
other modifiers is grabbed too. Left and right modifiers share one X modifier bit,
so either side counts.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import select
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from Xlib import X
from Xlib import error as xerror

from holodesk.platform.errors import HotkeyError
from holodesk.platform.keys import side_neutral
from holodesk.platform.x11.connection import open_display
from holodesk.platform.x11.keysyms import keysym_for_key

log = logging.getLogger(__name__)

# The eight X modifier bits, in the order of GetModifierMapping's rows.
_MODIFIER_BITS = (
    X.ShiftMask,
    X.LockMask,
    X.ControlMask,
    X.Mod1Mask,
    X.Mod2Mask,
    X.Mod3Mask,
    X.Mod4Mask,
    X.Mod5Mask,
)
# keysyms (keysymdef.h) that put a key in the Alt or the Meta (Super) modifier.
_ALT_KEYSYMS = frozenset({0xFFE9, 0xFFEA, 0xFFE7, 0xFFE8})  # Alt_L/R, Meta_L/R
_SUPER_KEYSYMS = frozenset({0xFFEB, 0xFFEC})  # Super_L/R
_FIXED_BITS = {"shift": X.ShiftMask, "ctrl": X.ControlMask}
# Where a keymap puts no Alt or Super key in any modifier: the usual bits.
_USUAL_BITS = {"alt": X.Mod1Mask, "meta": X.Mod4Mask}


class X11ChordGrab:
    """Calls `on_press` (on its own thread) whenever `keys` (a parsed chord:
    modifiers, then one other key) is pressed on `display`."""

    def __init__(self, display: str, keys: Sequence[str], on_press: Callable[[], None]) -> None:
        self.display_name = display
        self.keys = tuple(keys)
        self._on_press = on_press
        self._connection: Any = None
        self._thread: threading.Thread | None = None
        self._wake_read, self._wake_write = -1, -1

    def start(self) -> None:
        """Grab the chord; once this returns, a press is heard. HotkeyError if the
        display cannot be reached or another program holds the chord."""
        try:
            connection = open_display(self.display_name)
        except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as error:
            raise HotkeyError(f"cannot open X display {self.display_name!r}: {error}") from error
        try:
            keycodes = _grab(connection, self.keys)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(
            target=self._listen, args=(frozenset(keycodes),), name="holodesk-hotkey", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float) -> bool:
        """Let the chord go; True once the listening thread has ended (it closes the
        connection, which ends the grabs)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        with contextlib.suppress(OSError):  # a thread that already ended closed its end
            os.write(self._wake_write, b"x")
        thread.join(timeout_s)
        os.close(self._wake_write)  # a thread still in select() reads end-of-file: it ends
        return not thread.is_alive()

    def _listen(self, keycodes: frozenset[int]) -> None:
        connection = self._connection
        try:
            while True:
                # Events python-xlib already read (while it waited for a reply) are
                # queued in it, where select() cannot see them: drain those first.
                while connection.pending_events():
                    event = connection.next_event()
                    if event.type == X.KeyPress and event.detail in keycodes:
                        self._on_press()
                readable, _, _ = select.select([connection.fileno(), self._wake_read], [], [])
                if self._wake_read in readable:
                    return
        except (xerror.ConnectionClosedError, OSError) as error:
            log.warning("the emergency-stop hotkey stopped listening: %s", error)
        finally:
            with contextlib.suppress(xerror.ConnectionClosedError, OSError):
                connection.close()
            os.close(self._wake_read)


def _grab(connection: Any, keys: Sequence[str]) -> list[int]:
    """Grab the chord's key with its modifiers and with every combination of the
    others; the keycodes grabbed. HotkeyError if the chord itself is taken."""
    *modifiers, key = keys
    root = connection.screen().root
    found = connection.keysym_to_keycodes(keysym_for_key(key))
    keycodes = list(dict.fromkeys(code for code, _ in found))
    if not keycodes:
        raise HotkeyError(f"no key of this keyboard types {key!r}")
    bits = _modifier_bits(connection)
    chord_mask = 0
    for modifier in modifiers:
        chord_mask |= bits[side_neutral(modifier)]
    others = [bit for bit in _MODIFIER_BITS if not bit & chord_mask]
    catchers: list[tuple[int, Any]] = []
    for keycode in keycodes:
        for extra in _combinations(others):
            catcher = xerror.CatchError(xerror.BadAccess)
            root.grab_key(
                keycode, chord_mask | extra, False, X.GrabModeAsync, X.GrabModeAsync,
                onerror=catcher,
            )  # fmt: skip
            catchers.append((extra, catcher))
    connection.sync()  # the server has set every grab (or refused it) by now
    if any(extra == 0 and catcher.get_error() for extra, catcher in catchers):
        raise HotkeyError(
            f"another program (the window manager, a hotkey tool, another holodesk "
            f"session on this display) already holds {'+'.join(keys)}: choose another "
            "chord (--estop-hotkey)"
        )
    taken = sum(1 for _, catcher in catchers if catcher.get_error())
    if taken:
        log.debug("%d of %d combinations of %s are held by others", taken, len(catchers), keys)
    return keycodes


def _combinations(bits: Sequence[int]) -> Iterator[int]:
    for count in range(len(bits) + 1):
        for chosen in itertools.combinations(bits, count):
            yield sum(chosen)


def _modifier_bits(connection: Any) -> dict[str, int]:
    """The X modifier bit of each modifier a chord may name, from this keymap."""
    bits = dict(_FIXED_BITS)
    for bit, keycodes in zip(_MODIFIER_BITS, connection.get_modifier_mapping(), strict=True):
        if bit in (X.ShiftMask, X.LockMask, X.ControlMask):
            continue
        keysyms = {connection.keycode_to_keysym(code, level) for code in keycodes if code
                   for level in range(4)}  # fmt: skip
        if "alt" not in bits and keysyms & _ALT_KEYSYMS:
            bits["alt"] = bit
        if "meta" not in bits and keysyms & _SUPER_KEYSYMS:
            bits["meta"] = bit
    return {**_USUAL_BITS, **bits}
