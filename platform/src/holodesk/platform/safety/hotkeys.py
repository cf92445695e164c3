"""A global hotkey, heard whatever window has focus: the emergency stop.

One listener per OS, chosen here: on Linux an X11 passive key grab on $DISPLAY
(x11/hotkey.py: the server sends the chord alone, however busy the keyboard),
elsewhere pynput (macOS event taps, Windows low-level hooks), so the client never
touches an OS API. Chords are written in the contract's key vocabulary
("ctrl+alt+shift+escape"). Key presses that the OS marks as injected (SendInput
on Windows, pynput's own) are ignored by pynput, so on those systems only a human
can press the hotkey; on X11, XTEST input counts.

On X11 the hotkey listens on $DISPLAY, the desktop the user sits at, which is also
where the x11 backend works unless told another display.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from holodesk.platform.errors import HotkeyError, UnknownKeyError
from holodesk.platform.keys import is_modifier, normalize_key
from holodesk.platform.wayland import detect_wayland

__all__ = ["DEFAULT_EMERGENCY_STOP", "HotkeyError", "HotkeyListener", "parse_chord", "to_pynput"]

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


class _Listening(Protocol):
    def stop(self, timeout_s: float) -> bool: ...


class HotkeyListener:
    """Calls `on_press` (on a thread of its own) whenever the chord is pressed."""

    def __init__(self, chord: str, on_press: Callable[[], None]) -> None:
        self.keys = parse_chord(chord)
        self.chord = "+".join(self.keys)
        self._on_press = on_press
        self._listener: _Listening | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Listen from now on: a chord pressed once this returns is heard.
        HotkeyError if this desktop offers no way to."""
        if self._listener is not None:
            return
        if sys.platform.startswith("linux"):
            self._listener = _x11_grab(self.keys, self._fire, _x_display(os.environ))
        else:
            self._listener = _PynputHotkey.start(self.keys, self._fire, timeout_s)

    def _fire(self) -> None:
        self._on_press()

    def stop(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        """Stop listening; True once the listener's thread has ended."""
        listener, self._listener = self._listener, None
        return listener is None or listener.stop(timeout_s)

    @property
    def running(self) -> bool:
        return self._listener is not None

    def __enter__(self) -> HotkeyListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _x_display(environ: Mapping[str, str]) -> str:
    display = environ.get("DISPLAY")
    if not display:
        wayland = detect_wayland(environ)
        where = f" (a Wayland session: {wayland.describe()})" if wayland else ""
        raise HotkeyError(
            f"no X display to listen on: DISPLAY is not set{where}; run the client in "
            "the graphical session, or turn the hotkey off and stop with Ctrl-C"
        )
    return display


def _x11_grab(keys: tuple[str, ...], on_press: Callable[[], None], display: str) -> _Listening:
    from holodesk.platform.x11.hotkey import X11ChordGrab

    grab = X11ChordGrab(display, keys, on_press)
    grab.start()
    return grab


class _PynputHotkey:
    """pynput's GlobalHotKeys, where the OS has no grab of its own to ask for."""

    def __init__(self, listener: Any) -> None:
        self._listener = listener

    @classmethod
    def start(
        cls, keys: tuple[str, ...], on_press: Callable[[], None], timeout_s: float
    ) -> _PynputHotkey:
        try:
            from pynput import keyboard
        except Exception as error:  # pynput raises ImportError, or OS errors, per OS
            raise HotkeyError(_explain(error, sys.platform)) from error
        listener = keyboard.GlobalHotKeys({to_pynput(keys): on_press})
        if getattr(listener, "IS_TRUSTED", True) is False:
            raise HotkeyError(
                "macOS does not let this process see the keyboard: grant it Input "
                "Monitoring (System Settings > Privacy & Security), then start it again"
            )
        listener.start()
        if not _wait_ready(listener, timeout_s):
            listener.stop()
            raise HotkeyError(f"the hotkey listener did not start within {timeout_s:g} s")
        return cls(listener)

    def stop(self, timeout_s: float) -> bool:
        self._listener.stop()
        self._listener.join(timeout_s)
        return not self._listener.is_alive()


def _explain(error: Exception, platform: str) -> str:
    if platform == "darwin":
        fix = "grant the terminal Accessibility and Input Monitoring permissions"
    else:
        fix = "run the client in the user's desktop session"
    return f"cannot listen for a global hotkey: {error}; {fix}"


def _wait_ready(listener: Any, timeout_s: float) -> bool:
    """pynput's wait() blocks forever if its thread dies first; wait on a side thread."""
    ready = threading.Event()

    def wait() -> None:
        listener.wait()
        ready.set()

    threading.Thread(target=wait, name="holodesk-hotkey-ready", daemon=True).start()
    step = 0.05
    waited = 0.0
    while not ready.wait(step):
        waited += step
        if not listener.is_alive() or waited >= timeout_s:
            return ready.is_set()
    return True
