"""A native Wayland app for the conformance suite (GTK 3, the system's python3-gi).

What tests/apps/probe_app.py is on X11, for a Wayland compositor's own clients: a
600x400 window with the same widgets at the same places (OK button, one-line
entry, a canvas that takes pointer events, a multi-line text area), logging
every input event it receives. Run by Debian's /usr/bin/python3:

    python3 gtk_conformance_app.py LOG_PATH [--fullscreen]

--fullscreen: the window asks to be fullscreen, so a compositor that places and
decorates windows itself (mutter: GTK draws its own title bar and shadow there)
shows the surface at the output's origin with nothing around it; the widgets keep
their places, at the surface's top left.

Records (one JSON object per line):
  ready     once shown: widgets {name: [x, y, width, height]} in surface-local
            logical pixels (sway draws no decorations, so the surface is the window)
  press / release   on the canvas: button (GDK numbers: 1-3, back 8, forward 9),
                    x, y (surface-local, doubles), state (GdkModifierType bits)
  multi     GDK recognised a double or triple click: count (logged after its press)
  motion    on the canvas: x, y, state (BUTTON1_MASK while the left button is held)
  scroll    one wheel notch: dx, dy (the signs of the axis values the compositor
            sent, read as smooth deltas: GTK 3's discrete directions swap left and
            right on Wayland, its gdkdevice-wayland.c maps a positive horizontal
            axis_discrete to GDK_SCROLL_LEFT, where wl_pointer says right)
  key / keyup       keyval (its name as X names the keysym: GDK leaves XF86's
                    prefix off, "AudioMute"), code (the keyval), char, state
  focus     a text field took the keyboard focus: widget ("entry" or "area")
  command   the OK button was clicked
  text      a field's text changed: widget, text
  fullscreen        the compositor made the window fullscreen (--fullscreen only)

Motion events are not compressed (gdk_window_set_event_compression), so every
motion the compositor sends is logged, as an X server reports each one.
The app id is holodesk-gtk-conformance (for sway criteria).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import gi  # type: ignore[import-not-found]

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # type: ignore[import-not-found]  # noqa: E402

APP_ID = "holodesk-gtk-conformance"
WIDTH, HEIGHT = 600, 400
# The Tk probe's places, so both apps are aimed at alike.
PLACES = {
    "ok": (10, 10, 80, 32),
    "entry": (100, 10, 300, 32),
    "canvas": (10, 60, 580, 230),
    "area": (10, 300, 580, 90),
}
POINTER_EVENTS = (
    Gdk.EventMask.BUTTON_PRESS_MASK
    | Gdk.EventMask.BUTTON_RELEASE_MASK
    | Gdk.EventMask.POINTER_MOTION_MASK
    | Gdk.EventMask.SCROLL_MASK
    | Gdk.EventMask.SMOOTH_SCROLL_MASK
)
SCROLL_STEPS = {
    Gdk.ScrollDirection.UP: (0, -1),
    Gdk.ScrollDirection.DOWN: (0, 1),
    Gdk.ScrollDirection.LEFT: (-1, 0),
    Gdk.ScrollDirection.RIGHT: (1, 0),
}
XF86_KEYSYMS = (0x1008FF00, 0x1008FFFF)  # the vendor keysyms (media, browser keys)
MULTI_CLICKS = {Gdk.EventType._2BUTTON_PRESS: 2, Gdk.EventType._3BUTTON_PRESS: 3}


class Probe:
    def __init__(self, log_path: str, fullscreen: bool = False) -> None:
        self.log = open(log_path, "w", buffering=1)  # noqa: SIM115 - for the app's lifetime
        GLib.set_prgname(APP_ID)
        self.window = Gtk.Window(title="holodesk gtk conformance")
        self.window.set_default_size(WIDTH, HEIGHT)
        fixed = Gtk.Fixed()
        self.ok = Gtk.Button(label="OK")
        self.entry = Gtk.Entry()
        self.canvas = Gtk.DrawingArea()
        self.area = Gtk.TextView()
        widgets = {"ok": self.ok, "entry": self.entry, "canvas": self.canvas, "area": self.area}
        for name, (x, y, width, height) in PLACES.items():
            widgets[name].set_size_request(width, height)
            fixed.put(widgets[name], x, y)
        self.canvas.add_events(POINTER_EVENTS)
        self.canvas.connect("button-press-event", self.on_button)
        self.canvas.connect("button-release-event", self.on_button)
        self.canvas.connect("motion-notify-event", self.on_motion)
        self.canvas.connect("scroll-event", self.on_scroll)
        self.canvas.connect("realize", lambda w: w.get_window().set_event_compression(False))
        self.window.connect("realize", lambda w: w.get_window().set_event_compression(False))
        # On the toplevel, before it hands the key to the focused widget.
        self.window.connect("key-press-event", self.on_key("key"))
        self.window.connect("key-release-event", self.on_key("keyup"))
        self.ok.connect("clicked", lambda _b: self.write({"type": "command"}))
        self.entry.connect("focus-in-event", lambda *_: self.on_focus("entry"))
        self.area.connect("focus-in-event", lambda *_: self.on_focus("area"))
        self.entry.connect("changed", lambda e: self.on_text("entry", e.get_text()))
        buffer = self.area.get_buffer()
        buffer.connect("changed", lambda b: self.on_text("area", _buffer_text(b)))
        self.window.add(fixed)
        self.window.connect("destroy", Gtk.main_quit)
        if fullscreen:
            self.window.connect("window-state-event", self.on_state)
            self.window.fullscreen()
        self.window.show_all()
        self.window.set_focus(None)  # no field focused: a test's first click focuses one
        GLib.idle_add(self.announce)

    def write(self, record: dict[str, Any]) -> None:
        self.log.write(json.dumps(record) + "\n")

    def announce(self) -> bool:
        self.write({"type": "ready", "widgets": PLACES})
        return False  # once

    def on_button(self, widget: Any, event: Any) -> bool:
        if event.type in MULTI_CLICKS:
            self.write({"type": "multi", "count": MULTI_CLICKS[event.type]})
            return False
        kind = "press" if event.type == Gdk.EventType.BUTTON_PRESS else "release"
        self.write({"type": kind, "button": event.button, "state": int(event.state),
                    **_surface(widget, event)})  # fmt: skip
        return False

    def on_motion(self, widget: Any, event: Any) -> bool:
        self.write({"type": "motion", "state": int(event.state), **_surface(widget, event)})
        return False

    def on_scroll(self, _widget: Any, event: Any) -> bool:
        if event.direction == Gdk.ScrollDirection.SMOOTH:
            _, delta_x, delta_y = event.get_scroll_deltas()
            dx, dy = _sign(delta_x), _sign(delta_y)
            if dx or dy:  # a scroll-stop record carries nothing
                self.write({"type": "scroll", "dx": dx, "dy": dy})
        elif event.direction in SCROLL_STEPS:  # GTK sends none with the smooth mask
            raise AssertionError(f"a discrete scroll event reached the canvas: {event.direction}")
        return False

    def on_key(self, kind: str) -> Any:
        def handler(_widget: Any, event: Any) -> bool:
            code = Gdk.keyval_to_unicode(event.keyval)
            name = Gdk.keyval_name(event.keyval) or ""
            if XF86_KEYSYMS[0] <= event.keyval <= XF86_KEYSYMS[1]:
                name = "XF86" + name
            self.write({"type": kind, "keyval": name, "code": event.keyval,
                        "char": chr(code) if code else "", "state": int(event.state)})  # fmt: skip
            return False

        return handler

    def on_state(self, _widget: Any, event: Any) -> bool:
        if event.changed_mask & event.new_window_state & Gdk.WindowState.FULLSCREEN:
            self.write({"type": "fullscreen"})
        return False

    def on_focus(self, widget: str) -> bool:
        self.write({"type": "focus", "widget": widget})
        return False

    def on_text(self, widget: str, text: str) -> None:
        self.write({"type": "text", "widget": widget, "text": text})


def _surface(widget: Any, event: Any) -> dict[str, float]:
    """The event's position in the window's surface: the widget's own coordinates
    (at the wire's 1/256 precision) plus where it sits in the toplevel."""
    allocation = widget.get_allocation()
    return {"x": event.x + allocation.x, "y": event.y + allocation.y}


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _buffer_text(buffer: Any) -> str:
    return str(buffer.get_text(buffer.get_start_iter(), buffer.get_end_iter(), True))


def main() -> None:
    Probe(sys.argv[1], fullscreen="--fullscreen" in sys.argv[2:])
    Gtk.main()


if __name__ == "__main__":
    main()
