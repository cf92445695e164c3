"""Detect a Wayland session from the environment (no Wayland protocol spoken)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class WaylandSession:
    """Evidence that this process runs in a Wayland session."""

    wayland_display: str
    session_type: str
    xwayland_display: str

    @property
    def has_xwayland(self) -> bool:
        """True when an X server (XWayland) is reachable through DISPLAY."""
        return bool(self.xwayland_display)

    def describe(self) -> str:
        facts = [
            f"{name}={value}"
            for name, value in (
                ("WAYLAND_DISPLAY", self.wayland_display),
                ("XDG_SESSION_TYPE", self.session_type),
            )
            if value
        ]
        return ", ".join(facts)


def detect_wayland(environ: Mapping[str, str]) -> WaylandSession | None:
    """The Wayland session this environment belongs to, or None."""
    wayland_display = environ.get("WAYLAND_DISPLAY", "")
    session_type = environ.get("XDG_SESSION_TYPE", "")
    if not wayland_display and session_type.lower() != "wayland":
        return None
    return WaylandSession(
        wayland_display=wayland_display,
        session_type=session_type,
        xwayland_display=environ.get("DISPLAY", ""),
    )
