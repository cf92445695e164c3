"""Wayland internals of the `wayland` backend; see `holodesk.platform.wayland.backend`.

Importing this package stays cheap (no D-Bus, no evdev): the X11 preflight and
the safety hotkeys use `detect_wayland` on every platform.
"""

from holodesk.platform.wayland.session import WaylandSession, detect_wayland

__all__ = ["WaylandSession", "detect_wayland"]
