"""The environment variables through which a process finds its desktop session.

A process started by the desktop session inherits these; one started by another
program with a trimmed environment (an MCP host's stdio server: the MCP Python
SDK passes only HOME, LOGNAME, PATH, SHELL, TERM and USER) does not, and then no
backend can find the screen. Whoever starts such a process records them from a
shell of the session (`holodesk mcp install`); the list lives here, beside the
backends that read them, so it grows with them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from holodesk.platform.backend_env import BACKEND_ENV

# In the order a person reads them: X11, Wayland (and the portal's D-Bus), the
# session's kind, then holodesk's own choice of backend and Wayland input route.
SESSION_ENV: tuple[str, ...] = (
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_SESSION_TYPE",
    "XDG_CURRENT_DESKTOP",
    BACKEND_ENV,
    "HOLODESK_WAYLAND_INPUT",
)
# A Linux or BSD desktop is found through one of these; macOS and Windows need none.
DISPLAY_ENV: tuple[str, ...] = ("DISPLAY", "WAYLAND_DISPLAY")
_SESSION_PLATFORMS = ("linux", "freebsd", "openbsd", "netbsd")


def session_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of SESSION_ENV that `environ` sets (to something not blank)."""
    return {name: environ[name] for name in SESSION_ENV if environ.get(name, "").strip()}


def needs_display_env(platform: str | None = None) -> bool:
    """Whether a desktop on `platform` (`sys.platform` spelling; None: this one) is
    found through DISPLAY_ENV: on Linux and the BSDs, yes."""
    return (platform or sys.platform).startswith(_SESSION_PLATFORMS)
