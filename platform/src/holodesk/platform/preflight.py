"""Cheap checks run before a backend is imported, each problem with its fix.

They inspect only the environment and installed packages, so `select` can
report every problem at once, before any connection is attempted.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from typing import Any

from holodesk.platform.wayland import detect_wayland

Problem = tuple[str, str]

log = logging.getLogger(__name__)

_START_XVFB = "Xvfb :99 -screen 0 1920x1080x24 & export DISPLAY=:99"


def problems(backend: str, options: Mapping[str, Any], environ: Mapping[str, str]) -> list[Problem]:
    """Every problem that would stop `backend` from starting here."""
    if backend == "x11":
        return x11_problems(options.get("display"), environ)
    return []


def installed(module: str) -> bool:
    """True when `module` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


def x11_problems(display: str | None, environ: Mapping[str, str]) -> list[Problem]:
    found: list[Problem] = []
    if not installed("Xlib"):
        found.append(
            (
                "python-xlib is not installed",
                "install it: `uv sync` in the holodesk checkout, or `pip install python-xlib`",
            )
        )
    if not installed("mss"):
        found.append(("mss is not installed", "install it: `pip install mss`"))
    display = display or environ.get("DISPLAY", "")
    wayland = detect_wayland(environ)
    if wayland is not None and not display:
        found.append(
            (
                f"this is a Wayland session ({wayland.describe()}) without an X server: "
                "Wayland gives no client X11-style screen capture or input injection",
                "log into an Xorg session (e.g. 'GNOME on Xorg' on the login screen), "
                "or use XWayland by setting DISPLAY (e.g. export DISPLAY=:0; reaches X11 "
                "apps only), or choose a Wayland backend: HOLODESK_PLATFORM_BACKEND=wlroots "
                "(sway, Hyprland, river), or HOLODESK_PLATFORM_BACKEND=wayland (the desktop "
                "portal's RemoteDesktop on GNOME and KDE, else uinput)",
            )
        )
    elif not display:
        found.append(
            (
                "DISPLAY is not set, so there is no X server to connect to",
                "run inside the graphical session (e.g. as a systemd --user service), "
                f"export DISPLAY=:0 for the local desktop, or start a virtual one: {_START_XVFB}",
            )
        )
    elif wayland is not None:
        # Works, with limits worth knowing about; not an error.
        log.warning(
            "Wayland session (%s): using XWayland at DISPLAY=%s; only X11 apps see "
            "injected input and Wayland windows may capture black",
            wayland.describe(),
            display,
        )
    return found
