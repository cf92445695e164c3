"""Which backend a Linux or BSD session gets, and why: one decision, said the same everywhere.

`open_backend` (through `holodesk.platform.select`) opens what this decides and
`holodesk doctor` (through `holodesk.platform.wlroots.route`) reports it, so the
two cannot disagree. The order:

1. no Wayland session (WAYLAND_DISPLAY unset, or naming no socket: a stale
   variable) and an X server or none: x11 (a stale WAYLAND_DISPLAY without any
   X server gets wayland, whose portal needs only the session bus);
2. the compositor offers the wlroots protocols (screencopy, virtual pointer and
   keyboard: sway, Hyprland, river): wlroots;
3. any other live compositor (GNOME, KDE): wayland, whose own auto route takes
   the portal's RemoteDesktop + ScreenCast where offered, else uinput.

XWayland's DISPLAY does not change that: inside a Wayland session x11 input and
capture reach X11 clients only, so x11 is taken there only when asked for by
name ($HOLODESK_PLATFORM_BACKEND=x11). When the chosen backend cannot open, the
error lists what was passed over on the way (`passed_over`), the backend's own
causes, and what else could be chosen (`alternatives`), each with its fix.

`decide` is the pure rule over an environment and the compositor's answer;
`choose` asks the compositor (one registry roundtrip) when there is one to ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from holodesk.platform.backend_env import BACKEND_ENV
from holodesk.platform.wayland.session import detect_wayland

if TYPE_CHECKING:
    from holodesk.platform.wlroots.probe import Globals

Problem = tuple[str, str]

# Pins the wayland backend's input route (portal or uinput): read by the backend, and
# by the doctor's route finding so both say the same.
INPUT_ENV = "HOLODESK_WAYLAND_INPUT"


@dataclass(frozen=True)
class SessionChoice:
    """The backend for this session, why, and what an error should add to its own causes."""

    backend: str  # x11, wlroots or wayland
    why: str
    # Routes tried first and not usable here, each (cause, fix).
    passed_over: tuple[Problem, ...] = ()
    # Backends this session could also use, not taken by default, each (what, how).
    alternatives: tuple[Problem, ...] = ()

    def explain(self, causes: list[Problem]) -> list[Problem]:
        """`causes` of the chosen backend's failure, with what was passed over first and
        the alternatives after: every route, each with its fix, in one list."""
        return [*self.passed_over, *causes, *self.alternatives]


def choose(environ: Mapping[str, str]) -> SessionChoice:
    """The choice for this environment, asking its compositor when it names one."""
    from holodesk.platform.wlroots.probe import Globals, compositor_globals

    if not environ.get("WAYLAND_DISPLAY", "").strip():
        return decide(environ, Globals(error="WAYLAND_DISPLAY is not set", absent=True))
    return decide(environ, compositor_globals(environ))


def decide(environ: Mapping[str, str], found: Globals) -> SessionChoice:
    """The choice, given what $WAYLAND_DISPLAY's compositor advertised (`found`)."""
    from holodesk.platform.wlroots.connection import NO_DISPLAY_FIX, NOT_WLROOTS_FIX, REQUIRED

    session = detect_wayland(environ)
    display = environ.get("DISPLAY", "").strip()
    if session is None:
        return SessionChoice("x11", "no Wayland session (WAYLAND_DISPLAY and XDG_SESSION_TYPE)")
    socket = session.wayland_display.strip()
    if found.absent:
        if not socket:
            why = f"{session.describe()}, but WAYLAND_DISPLAY is not set: no compositor to ask"
        else:
            why = f"WAYLAND_DISPLAY={socket} names no compositor ({found.error})"
        if display:
            return SessionChoice("x11", f"{why}; DISPLAY={display} is the X server")
        if not socket:
            return SessionChoice("x11", why)
        # A stale WAYLAND_DISPLAY and no X server: the portal needs only the session bus.
        return SessionChoice(
            "wayland", why, passed_over=((f"wlroots route: {why}", NO_DISPLAY_FIX),)
        )
    if found.offers_route:
        offered = ", ".join(f"{name} ({what})" for name, what in REQUIRED.items())
        why = f"the compositor at {socket} offers every protocol it needs: {offered}"
        return SessionChoice("wlroots", why, alternatives=_xwayland(display))
    if found.error:
        lacking = f"the wlroots protocols could not be asked for ({found.error})"
    else:
        missing = ", ".join(f"{name} for {REQUIRED[name]}" for name in found.missing)
        lacking = f"the compositor at {socket} lacks {missing}"
    return SessionChoice(
        "wayland",
        lacking,
        passed_over=((f"wlroots route: {lacking}", NOT_WLROOTS_FIX),),
        alternatives=_xwayland(display),
    )


def _xwayland(display: str) -> tuple[Problem, ...]:
    """XWayland, where there is one: usable, but only X11 apps would see our input."""
    if not display:
        return ()
    return (
        (
            f"x11 through XWayland (DISPLAY={display}) is not chosen on a Wayland session: "
            "its input and capture reach X11 apps only, not native Wayland windows",
            f"to drive X11 apps only, set {BACKEND_ENV}=x11",
        ),
    )
