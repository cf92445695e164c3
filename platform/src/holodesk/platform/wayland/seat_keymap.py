"""The compositor's keymap, as its seat's keyboard hands it to every Wayland client.

A portal or uinput keystroke types what the compositor's keymap says, so what
can be typed is known only from that keymap: a client binds wl_seat, asks its
wl_keyboard, and receives the keymap (xkb text through a file descriptor) at
once, whether or not it has the focus. A new one comes whenever the desktop's
layouts change; `current()` takes it in before each use.

Two compositor facts shape this: mutter 43 crashes (SIGSEGV) when a client asks
for the keyboard of a seat that has none, which a headless mutter is until a
virtual keyboard exists, so the seat's capabilities are checked first; and
which layout is active is told only to the client with the keyboard focus
(wl_keyboard.modifiers), which holodesk never has, so callers must allow for
every layout of a keymap that has several.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import select
import threading
from collections.abc import Mapping
from typing import Any

from holodesk.platform.errors import PlatformError
from holodesk.platform.wayland.xkb import XkbError, XkbKeymap
from holodesk.platform.wlroots.connection import WlrConnection

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 2.0
SEAT_KEYBOARD = 2  # wl_seat capability
FORMAT_XKB_V1 = 1
SEAT_ONLY: dict[str, str] = {"wl_seat": "a seat (wl_seat)"}


class KeymapUnknownError(PlatformError):
    """The compositor's keymap could not be read; the message says why."""


class SeatKeymap:
    """An open wl_keyboard of the compositor's seat, and the last keymap it sent."""

    def __init__(self, connection: WlrConnection) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._keymap: XkbKeymap | None = None
        self._problem = ""
        self._keyboard: Any = None

    @classmethod
    def open(cls, environ: Mapping[str, str] | None = None) -> SeatKeymap:
        """Ask $WAYLAND_DISPLAY's compositor in `environ` (default this process's) for
        its keymap. KeymapUnknownError, saying why, when it cannot be had within
        ASK_TIMEOUT_S (a compositor that accepts but never answers cannot hang us)."""
        env = os.environ if environ is None else environ
        target = env.get("WAYLAND_DISPLAY", "").strip()
        if not target:
            raise KeymapUnknownError("WAYLAND_DISPLAY is not set, so there is no compositor to ask")
        outcome: list[SeatKeymap | BaseException] = []

        def ask() -> None:
            try:
                outcome.append(cls._ask(target, env))
            except BaseException as error:  # handed to the caller's thread
                outcome.append(error)

        worker = threading.Thread(target=ask, name="seat-keymap", daemon=True)
        worker.start()
        worker.join(ASK_TIMEOUT_S)
        if not outcome:
            raise KeymapUnknownError(
                f"the compositor at {target!r} sent no keymap within {ASK_TIMEOUT_S:g} s"
            )
        result = outcome[0]
        if isinstance(result, BaseException):
            if isinstance(result, KeymapUnknownError):
                raise result
            if isinstance(result, PlatformError | ImportError | OSError):
                raise KeymapUnknownError(f"asking the compositor failed: {result}") from result
            raise result
        return result

    @classmethod
    def _ask(cls, target: str, env: Mapping[str, str]) -> SeatKeymap:
        connection = WlrConnection.open(target, env, needs=SEAT_ONLY)
        seat = cls(connection)
        try:
            if not connection.seat_capabilities & SEAT_KEYBOARD:
                raise KeymapUnknownError("the compositor's seat has no keyboard yet")
            with connection.lock:
                seat._keyboard = connection.bound["wl_seat"].get_keyboard()
                seat._keyboard.dispatcher["keymap"] = seat._on_keymap
            connection.roundtrip()
            if seat._keymap is None:
                raise KeymapUnknownError(seat._problem or "the compositor sent no keymap")
        except BaseException:
            seat.close()
            raise
        return seat

    def current(self) -> XkbKeymap:
        """The keymap now: a newer one the compositor sent since is taken in first."""
        with self._lock, contextlib.suppress(Exception):
            display = self._connection.display
            while select.select([display.get_fd()], [], [], 0)[0]:
                if display.dispatch(block=True) < 0:
                    break
        keymap = self._keymap
        assert keymap is not None  # open() returns only once one came
        return keymap

    def _on_keymap(self, _keyboard: Any, format: int, fd: int, size: int) -> None:
        try:
            if format != FORMAT_XKB_V1:
                self._problem = f"the compositor's keymap is in format {format}, not xkb"
                return
            with mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ) as memory:
                text = memory[:size].rstrip(b"\0").decode(errors="replace")
        except OSError as error:
            self._problem = f"the compositor's keymap could not be read: {error}"
            return
        finally:
            os.close(fd)
        try:
            self._keymap = XkbKeymap.from_text(text)
        except XkbError as error:
            self._problem = str(error)
            log.warning("keeping the previous keymap: %s", error)

    def close(self) -> None:
        with self._lock:
            self._connection.close()
