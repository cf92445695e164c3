"""Input through a RemoteDesktop portal session (GNOME, KDE Plasma).

Pointer motion is absolute in one monitor stream's logical space; buttons are
evdev codes; wheel notches go as NotifyPointerAxisDiscrete (or, with
scroll="smooth", as NotifyPointerAxis pixels ending the gesture). Keys and text
go as keysyms (NotifyKeyboardKeysym), which the desktop types with a key of its
own keymap: GNOME's and KDE Plasma 5's drop a keysym their keymap has no key
for, without a word. So `keysyms` (`portal_keysyms`) checks every key of an
action against that keymap first and refuses the action, before sending any of
it, when one would not arrive; it also picks the keysym the keymap has (EuroSign
for "€", where U+20AC would be dropped).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.text import KeyPress, TextStep, chunk_text, plan_text
from holodesk.platform.wayland.buttons import evdev_button
from holodesk.platform.wayland.layout import DesktopLayout
from holodesk.platform.wayland.portal import (
    AXIS_HORIZONTAL,
    AXIS_VERTICAL,
    RemoteDesktopSession,
)
from holodesk.platform.wayland.portal_keysyms import KeysymSource
from holodesk.platform.x11.keysyms import keysym_for_key

SCROLL_MODES = ("discrete", "smooth")
# Logical pixels per wheel notch in smooth mode: Clutter's (GNOME's) discrete step.
DEFAULT_SMOOTH_STEP_PX = 10.0


class PortalInput(InputDriver):
    """InputDriver over a started RemoteDesktopSession (owned: closed with the driver).

    `keysyms`: the keysym of each key, refusing keys the desktop would drop
    (owned too: closed with the driver).
    """

    def __init__(
        self,
        session: RemoteDesktopSession,
        layout: Callable[[], DesktopLayout],
        *,
        keysyms: KeysymSource,
        scroll: str = "discrete",
        smooth_step_px: float = DEFAULT_SMOOTH_STEP_PX,
    ) -> None:
        super().__init__()
        if scroll not in SCROLL_MODES:
            raise ValueError(f"scroll must be one of {', '.join(SCROLL_MODES)}, not {scroll!r}")
        if smooth_step_px <= 0:
            raise ValueError(f"smooth_step_px must be positive, not {smooth_step_px}")
        self._session = session
        self._layout = layout
        self._keysyms = keysyms
        # The keysym each held key went down with, for its release.
        self._down: dict[str, int] = {}
        self._scroll_mode = scroll
        self._smooth_step_px = smooth_step_px
        self._lock = threading.RLock()
        self._position: tuple[int, int] | None = None
        # Whether this driver's own Caps Lock presses left it on. The portal never
        # reports the lock state, so a Caps Lock the user set is beyond our knowledge.
        self._caps_lock_on = False

    def _move(self, x: int, y: int) -> None:
        monitor, local_x, local_y = self._layout().locate(x, y)
        with self._lock:
            self._session.motion_absolute(monitor.node_id, local_x, local_y)
            self._position = (x, y)

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            self._session.button(evdev_button(button), down)

    def _scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            if self._scroll_mode == "smooth":
                if dx or dy:
                    step = self._smooth_step_px
                    self._session.axis(dx * step, dy * step, finish=True)
                return
            # One call per axis, vertical first (the X11 backend's order).
            if dy:
                self._session.axis_discrete(AXIS_VERTICAL, dy)
            if dx:
                self._session.axis_discrete(AXIS_HORIZONTAL, dx)

    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if not down:
                # A release goes out even for a key never pressed here: it cannot hurt.
                keysym = self._down.pop(key, None)
                self._session.keysym(keysym_for_key(key) if keysym is None else keysym, False)
                return
            keysym = self._down.get(key) or self._keysyms.keysyms([key])[key]
            self._session.keysym(keysym, True)
            self._down[key] = keysym
            if key == "capslock" and key not in self._held_keys:
                self._caps_lock_on = not self._caps_lock_on

    def type_text(self, text: str) -> None:
        steps = plan_text(text)  # refuses control characters before anything is typed
        with self._lock:
            # The compositor presses a key for each keysym, and Caps Lock would invert
            # its letters: switched off around the text (when we know it is on).
            caps = self._caps_lock_on
            keys = [key for step in steps for key in _keys_of(step)]
            # Every key checked against the desktop's keymap before any is sent.
            keysyms = self._keysyms.keysyms([*keys, "capslock"] if caps else keys)
            if caps:
                self._tap(keysyms["capslock"])
            try:
                self._type_steps(steps, keysyms)
            finally:
                if caps:
                    self._tap(keysyms["capslock"])

    def _type_steps(self, steps: list[TextStep], keysyms: dict[str, int]) -> None:
        with self._lock:
            for step in self._checked(steps):
                if isinstance(step, KeyPress):
                    self._tap(keysyms[step.key])
                    continue
                # The stop signal is checked before each bounded piece of the text.
                for piece in self._checked(chunk_text(step.text)):
                    for char in piece:
                        self._tap(keysyms[char])

    def _tap(self, keysym: int) -> None:
        self._session.keysym(keysym, True)
        self._session.keysym(keysym, False)

    def cursor_position(self) -> tuple[int, int]:
        """Where this driver last moved the pointer: the portal never reports it.

        Before the first move, the primary display's centre.
        """
        with self._lock:
            if self._position is not None:
                return self._position
        primary = self._layout().displays()[0].bounds
        return primary.x + primary.width // 2, primary.y + primary.height // 2

    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                self._session.close()
            finally:
                self._keysyms.close()


def _keys_of(step: TextStep) -> list[str]:
    """The keys a step of text presses: a named key, or each character."""
    return [step.key] if isinstance(step, KeyPress) else list(step.text)
