"""A native Wayland probe app (GTK 3, through the system's python3-gi): logs pointer input.

Run by Debian's /usr/bin/python3 (where python3-gi lives), not the project's venv:

    python3 gtk_probe_app.py LOG_PATH

Writes one JSON object per line to LOG_PATH:
  ready    once the window is shown
  press    {button, x, y}: x, y surface-local logical pixels, as doubles: Wayland
  release  sends them as 24.8 fixed point, so a test can tell which physical pixel
           of a scaled output the pointer is in
  motion   {x, y}
  scroll   {dx, dy}: one record per wheel notch
  text     {text}: the entry's contents after each change
The app id is holodesk-gtk-probe (for sway criteria).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import gi  # type: ignore[import-not-found]

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # type: ignore[import-not-found]  # noqa: E402

APP_ID = "holodesk-gtk-probe"


def _surface(widget: Any, event: Any) -> dict[str, float]:
    """The event's position in the window's surface, at the wire's precision: the
    widget's own coordinates (GTK 3's root ones are rounded) plus where it sits in
    the toplevel (no client-side decorations: sway decorates, here with nothing)."""
    allocation = widget.get_allocation()
    return {"x": event.x + allocation.x, "y": event.y + allocation.y}


def main() -> None:
    log = open(sys.argv[1], "w", buffering=1)  # noqa: SIM115 - open for the app's lifetime

    def write(record: dict[str, Any]) -> None:
        log.write(json.dumps(record) + "\n")

    GLib.set_prgname(APP_ID)
    window = Gtk.Window(title="holodesk gtk probe")
    window.set_default_size(400, 300)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    entry = Gtk.Entry()
    area = Gtk.DrawingArea()
    area.set_size_request(400, 260)
    area.add_events(
        Gdk.EventMask.BUTTON_PRESS_MASK
        | Gdk.EventMask.BUTTON_RELEASE_MASK
        | Gdk.EventMask.POINTER_MOTION_MASK
        | Gdk.EventMask.SCROLL_MASK
    )

    def on_button(kind: str) -> Any:
        def handler(_widget: Any, event: Any) -> bool:
            # A press is logged once, not again as GTK's 2BUTTON/3BUTTON extras.
            if kind == "release" or event.type == Gdk.EventType.BUTTON_PRESS:
                write({"type": kind, "button": event.button, **_surface(_widget, event)})
            return False

        return handler

    def on_motion(_widget: Any, event: Any) -> bool:
        write({"type": "motion", **_surface(_widget, event)})
        return False

    def on_scroll(_widget: Any, event: Any) -> bool:
        steps = {
            Gdk.ScrollDirection.UP: (0, -1),
            Gdk.ScrollDirection.DOWN: (0, 1),
            Gdk.ScrollDirection.LEFT: (-1, 0),
            Gdk.ScrollDirection.RIGHT: (1, 0),
        }
        if event.direction in steps:
            dx, dy = steps[event.direction]
            write({"type": "scroll", "dx": dx, "dy": dy})
        return False

    area.connect("button-press-event", on_button("press"))
    area.connect("button-release-event", on_button("release"))
    area.connect("motion-notify-event", on_motion)
    area.connect("scroll-event", on_scroll)
    entry.connect("changed", lambda widget: write({"type": "text", "text": widget.get_text()}))
    box.pack_start(entry, False, False, 0)
    box.pack_start(area, True, True, 0)
    window.add(box)
    window.connect("destroy", Gtk.main_quit)
    window.show_all()
    entry.grab_focus()

    def announce() -> bool:
        write({"type": "ready"})
        return False  # once

    GLib.idle_add(announce)
    Gtk.main()


if __name__ == "__main__":
    main()
