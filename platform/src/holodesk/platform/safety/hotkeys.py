"""A global hotkey, heard whatever window has focus: the emergency stop.

A thin wrapper over pynput (X11 RECORD, macOS event taps, Windows low-level
hooks), so the client never touches an OS API. Chords are written in the
contract's key vocabulary ("ctrl+alt+shift+escape"). Key presses that the OS
marks as injected (SendInput on Windows, pynput's own) are ignored by pynput, so
on those systems only a human can press the hotkey; on X11, XTEST input counts.

pynput reads $DISPLAY on X11: the hotkey listens on the desktop the user sits
at, which is also where the x11 backend works unless told another display.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from holodesk.platform.errors import PlatformError, UnknownKeyError
from holodesk.platform.keys import is_modifier, normalize_key
from holodesk.platform.wayland import detect_wayland
from holodesk.platform.x11.connection import open_display

log = logging.getLogger(__name__)

DEFAULT_EMERGENCY_STOP = "ctrl+alt+shift+escape"
START_TIMEOUT_S = 5.0

# Contract names -> pynput's Key names, where they differ or need <...>.
_PYNPUT_NAMES: dict[str, str] = {
    "meta": "cmd",
    "meta_l": "cmd_l",
    "meta_r": "cmd_r",
    "volume_mute": "media_volume_mute",
    "volume_down": "media_volume_down",
    "volume_up": "media_volume_up",
    "escape": "esc",
    "pageup": "page_up",
    "pagedown": "page_down",
    "capslock": "caps_lock",
    "printscreen": "print_screen",
}


class HotkeyError(PlatformError):
    """The hotkey cannot be listened for here; the message says why and what to do."""


def parse_chord(text: str) -> tuple[str, ...]:
    """Canonical keys of a chord like "ctrl+alt+shift+escape" (modifiers first).

    A hotkey needs at least one modifier and exactly one other key, so that
    neither ordinary typing nor a modifier alone can set it off.
    """
    parts = [part.strip() for part in text.split("+")]
    if any(not part for part in parts):
        raise ValueError(f"hotkey {text!r}: empty key name (write keys joined by '+')")
    try:
        keys = [normalize_key(part) for part in parts]
    except UnknownKeyError as error:
        raise ValueError(f"hotkey {text!r}: {error}") from None
    modifiers = [key for key in keys if is_modifier(key)]
    others = [key for key in keys if not is_modifier(key)]
    if not modifiers or len(others) != 1 or len(set(keys)) != len(keys):
        raise ValueError(
            f"hotkey {text!r}: use one or more modifiers and exactly one other key, "
            f"e.g. {DEFAULT_EMERGENCY_STOP!r}"
        )
    return (*modifiers, *others)


def to_pynput(keys: tuple[str, ...]) -> str:
    """pynput's spelling of a parsed chord, e.g. "<ctrl>+<alt>+<shift>+<esc>"."""
    out = []
    for key in keys:
        if len(key) == 1:
            # pynput matches the character the keyboard produced: a letter is lowercase.
            out.append(key.lower())
        else:
            out.append(f"<{_PYNPUT_NAMES.get(key, key)}>")
    return "+".join(out)


class HotkeyListener:
    """Calls `on_press` (on pynput's thread) whenever the chord is pressed."""

    def __init__(self, chord: str, on_press: Callable[[], None]) -> None:
        self.keys = parse_chord(chord)
        self.chord = "+".join(self.keys)
        self._on_press = on_press
        self._listener: Any = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Listen from now on; HotkeyError if this desktop offers no way to."""
        if self._listener is not None:
            return
        # The X11 probe stays connected until pynput's own connections are: an X server
        # that resets when its last client leaves (a plain `Xvfb :N`) drops any
        # connection that arrives meanwhile, and pynput opens one and closes it on
        # import, then opens two more.
        probe = _connect_checked(os.environ, sys.platform)
        try:
            self._listener = self._start_listener(timeout_s)
        finally:
            if probe is not None:
                probe.close()

    def _start_listener(self, timeout_s: float) -> Any:
        try:
            from pynput import keyboard
        except Exception as error:  # pynput raises ImportError, or Xlib errors, per OS
            raise HotkeyError(_explain(error, sys.platform)) from error
        listener = _hotkeys_class(keyboard)({to_pynput(self.keys): self._fire})
        if getattr(listener, "IS_TRUSTED", True) is False:
            raise HotkeyError(
                "macOS does not let this process see the keyboard: grant it Input "
                "Monitoring (System Settings > Privacy & Security), then start it again"
            )
        listener.start()
        if not _wait_listening(listener, timeout_s):
            listener.stop()
            raise HotkeyError(
                f"the hotkey listener did not start within {timeout_s:g} s "
                "(on X11 the server needs the RECORD extension)"
            )
        return listener

    def _fire(self) -> None:
        self._on_press()

    def stop(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        """Stop listening; True once the listener's thread has ended."""
        listener, self._listener = self._listener, None
        if listener is None:
            return True
        listener.stop()
        _unblock_xrecord(listener)
        listener.join(timeout_s)
        return not listener.is_alive()

    @property
    def running(self) -> bool:
        return self._listener is not None

    def __enter__(self) -> HotkeyListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _connect_checked(environ: Mapping[str, str], platform: str) -> Any:
    """On Linux, a connection to $DISPLAY proven to have RECORD; None elsewhere."""
    if not platform.startswith("linux"):
        return None
    wayland = detect_wayland(environ)
    if not environ.get("DISPLAY"):
        where = f" (a Wayland session: {wayland.describe()})" if wayland else ""
        raise HotkeyError(
            f"no X display to listen on: DISPLAY is not set{where}; run the client in "
            "the graphical session, or turn the hotkey off and stop with Ctrl-C"
        )
    return _connect_with_record(environ["DISPLAY"])


def _connect_with_record(display_name: str) -> Any:
    import Xlib.error

    try:
        display = open_display(display_name)
    except (Xlib.error.DisplayError, Xlib.error.ConnectionClosedError, OSError) as error:
        raise HotkeyError(f"cannot open X display {display_name!r}: {error}") from error
    try:
        if not display.has_extension("RECORD"):
            raise HotkeyError(
                f"X display {display_name!r} lacks the RECORD extension that global "
                "hotkeys need (Xvfb/Xorg: start it with '+extension RECORD')"
            )
    except BaseException:
        display.close()
        raise
    return display


def _explain(error: Exception, platform: str) -> str:
    if platform == "darwin":
        fix = "grant the terminal Accessibility and Input Monitoring permissions"
    elif platform.startswith("linux"):
        fix = "check that DISPLAY names a running X server this user may connect to"
    else:
        fix = "run the client in the user's desktop session"
    return f"cannot listen for a global hotkey: {error}; {fix}"


def _hotkeys_class(keyboard: Any) -> Any:
    """pynput's GlobalHotKeys; on X11 one that says when RECORD is enabled.

    pynput marks its X11 listener ready just before it asks the server to enable
    the RECORD context, so a chord pressed right after start() returned could go
    unheard (2 in 100 here, on a busy machine) and a session typed on. The
    server's first RECORD reply (StartOfData) is the proof that it listens.
    """
    if not keyboard.Listener.__module__.endswith("._xorg"):
        return keyboard.GlobalHotKeys
    from Xlib.ext import record

    class RecordingHotKeys(keyboard.GlobalHotKeys):  # type: ignore[misc]
        def __init__(self, hotkeys: dict[str, Callable[[], None]]) -> None:
            super().__init__(hotkeys)
            self.listening = threading.Event()

        def _handler(self, events: Any) -> None:
            # Every RECORD reply comes here (pynput's name for its callback).
            if events.category == record.StartOfData:
                self.listening.set()
            super()._handler(events)

    return RecordingHotKeys


def _wait_listening(listener: Any, timeout_s: float) -> bool:
    """Until the listener hears keys (its `listening` event, else pynput's ready
    mark); pynput's wait() blocks forever if its thread dies first, so it is
    waited on from a side thread."""
    listening = getattr(listener, "listening", None)
    if listening is None:
        listening = threading.Event()

        def wait() -> None:
            listener.wait()
            listening.set()

        threading.Thread(target=wait, name="holodesk-hotkey-ready", daemon=True).start()
    step = 0.05
    waited = 0.0
    while not listening.wait(step):
        waited += step
        if not listener.is_alive() or waited >= timeout_s:
            return listening.is_set()
    return True


def _unblock_xrecord(listener: Any) -> None:
    """pynput's X11 listener stops only at the next key event; end its RECORD now.

    It sends the disable request on the connection its thread is blocked
    reading; the RECORD protocol wants it on another one, which it also holds.
    """
    control = getattr(listener, "_display_stop", None)
    context = getattr(listener, "_context", None)
    if control is None or context is None:
        return
    try:
        control.record_disable_context(context)
        control.flush()
    except Exception as error:  # already closed: the thread ended by itself
        log.debug("stopping the X RECORD context: %s", error, exc_info=True)
        return
