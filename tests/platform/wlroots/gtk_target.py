"""The conformance suite's Target for tests/apps/gtk_conformance_app.py, a native Wayland app.

Its log is in GDK's terms (button numbers, keyval names, GdkModifierType bits,
surface-local logical pixels); this turns it into the suite's neutral records.
sway floats the window at a known logical rectangle, on an output at scale 1, so
a backend pixel is the window's origin plus the surface-local position.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from holodesk.platform.base import Backend, MouseButton, Region
from tests.platform.conformance import (
    X_BUTTONS,
    Field,
    Key,
    Motion,
    Observed,
    Press,
    Target,
    Wheel,
    _x_key,
)
from tests.platform.wlroots.gtk_probe import GtkProbe
from tests.platform.wlroots.sway import Sway
from tests.support.probe import Event

APP = Path(__file__).resolve().parents[2] / "apps" / "gtk_conformance_app.py"
APP_ID = "holodesk-gtk-conformance"
# GdkModifierType bits. Super reads as SUPER_MASK or Mod4, whichever the keymap maps.
SHIFT_MASK, CONTROL_MASK, MOD1_MASK, MOD4_MASK = 1 << 0, 1 << 2, 1 << 3, 1 << 6
BUTTON1_MASK, SUPER_MASK = 1 << 8, 1 << 26
_MODIFIERS = {CONTROL_MASK: "ctrl", SHIFT_MASK: "shift", MOD1_MASK: "alt", MOD4_MASK: "meta",
              SUPER_MASK: "meta"}  # fmt: skip
_FIELDS: dict[str, str] = {"line": "entry", "lines": "area"}
WARM_UP_TIMEOUT_S = 20.0
WARM_UP_RETRY_S = 0.25  # how long one move is given to show, before the next is sent


def start_app(sway: Sway, log_path: Path, window: Region) -> GtkProbe:
    """The conformance app on `sway`, floated at `window` (logical pixels)."""
    return GtkProbe.start(sway, log_path, window, app=APP, app_id=APP_ID)


class GtkTarget(Target):
    """The GTK conformance app, its GDK records made neutral."""

    def __init__(self, backend: Backend, app: GtkProbe) -> None:
        super().__init__(backend)
        self.app = app
        ready = app.events("ready")[0]
        origin = app.window
        self.widgets = {
            name: Region(origin.x + x, origin.y + y, width, height)
            for name, (x, y, width, height) in ready["widgets"].items()
        }
        self._first = 0  # where this target's records start in the app's log
        self._warm_up()

    def _warm_up(self) -> None:
        """Move the pointer over the canvas until the app logs the motion, then start
        the record afresh: sway shows a window it has just mapped and moved only
        once its transaction commits (the client's next frame), and until then our
        input goes to no surface; its tree already says where the window will be."""
        pad = self.widgets["canvas"]
        deadline = time.monotonic() + WARM_UP_TIMEOUT_S
        step = 0
        while not self.app.events("motion"):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the app saw no pointer motion in {WARM_UP_TIMEOUT_S:g} s: "
                    f"{self.app.events()[-5:]}"
                )
            step = step % 20 + 1
            self.backend.input.move(pad.x + step, pad.y + step)
            _poll(lambda: bool(self.app.events("motion")), WARM_UP_RETRY_S)
        self._first = len(self.app.events())

    @classmethod
    @contextlib.contextmanager
    def open(cls, factory: Callable[[], Backend], app: GtkProbe) -> Iterator[GtkTarget]:
        backend = factory()
        try:
            yield cls(backend, app)
        finally:
            backend.close()

    def _centre(self, name: str) -> tuple[int, int]:
        region = self.widgets[name]
        return region.x + region.width // 2, region.y + region.height // 2

    def pad(self) -> Region:
        return self.widgets["canvas"]

    def push_button(self) -> tuple[int, int]:
        return self._centre("ok")

    def pushed(self) -> bool:
        return bool(self.app.events("command"))

    def focus(self, field: Field) -> None:
        widget = _FIELDS[field]
        self.backend.input.click(*self._centre(widget))
        self.wait(
            lambda: any(e["widget"] == widget for e in self.app.events("focus")),
            f"the {widget} to take the focus",
        )

    def text(self, field: Field) -> str:
        widget = _FIELDS[field]
        changes = [e["text"] for e in self.app.events("text") if e["widget"] == widget]
        return str(changes[-1]) if changes else ""

    def observed(self) -> list[Observed]:
        return gtk_observed(self.app.events()[self._first :], self.app.window)


def gtk_observed(events: list[Event], window: Region) -> list[Observed]:
    """The app's records as neutral ones, positions in backend pixels (scale 1)."""
    out: list[Observed] = []
    for event in events:
        kind = event["type"]
        if kind == "multi":
            # Logged after the press it belongs to: that press was a double (triple) click.
            last = max(i for i, e in enumerate(out) if isinstance(e, Press) and e.kind == "press")
            press = out[last]
            assert isinstance(press, Press)
            out[last] = Press(press.kind, press.button, press.x, press.y, press.modifiers,
                              int(event["count"]))  # fmt: skip
        elif kind in ("press", "release") and event["button"] in X_BUTTONS:
            x, y = _pixel(event, window)
            out.append(Press(kind, _button(event), x, y, _modifiers(event["state"])))
        elif kind == "motion":
            out.append(Motion(*_pixel(event, window), bool(event["state"] & BUTTON1_MASK)))
        elif kind in ("key", "keyup"):
            key = _x_key({"keysym": event["keyval"], "char": event["char"]})
            out.append(Key("down" if kind == "key" else "up", key, _modifiers(event["state"])))
        elif kind == "scroll":
            out.append(Wheel(int(event["dx"]), int(event["dy"])))
    return out


def _poll(done: Callable[[], bool], timeout_s: float) -> bool:
    """Whether done() came true within timeout_s (polled)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _button(event: Event) -> MouseButton:
    return X_BUTTONS[int(event["button"])]  # GDK numbers the buttons as X does


def _pixel(event: Event, window: Region) -> tuple[int, int]:
    return window.x + math.floor(event["x"]), window.y + math.floor(event["y"])


def _modifiers(state: int) -> frozenset[str]:
    return frozenset(name for mask, name in _MODIFIERS.items() if state & mask)
