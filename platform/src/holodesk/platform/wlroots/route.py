"""Which Wayland route holodesk takes in this session, why, and what a person must approve.

For `holodesk doctor`. The backend comes from the choice `open_backend` makes
(`holodesk.platform.wayland.choice`), so the two say the same; then, for the
wayland backend, the route its auto input takes:

1. wlroots: the compositor offers screencopy, virtual pointer and keyboard, and
   the rest of `connection.REQUIRED`; nothing to approve;
2. portal: xdg-desktop-portal offers RemoteDesktop (with pointer and keyboard)
   and ScreenCast (`portal_route_status`): a dialog asks once and the restore
   token we keep says yes later, or, where the portal keeps no token
   (RemoteDesktop version 1, Debian 12's xdg-desktop-portal 1.16), at every start;
   KDE Plasma 5.27 asks nothing of an unsandboxed program, it notifies;
3. uinput: kernel virtual devices, which need write access to /dev/uinput;
4. x11 only where there is no Wayland session (WAYLAND_DISPLAY unset or naming
   no socket): XWayland's DISPLAY inside one reaches X11 apps only, so it is
   named as the alternative, not taken.

$HOLODESK_WAYLAND_INPUT (portal or uinput) pins the wayland backend's route, as
it does for the backend. An explicit backend ($HOLODESK_PLATFORM_BACKEND, --backend)
is not this choice; the doctor says so. Asking costs one Wayland registry roundtrip and a few
D-Bus property reads: nothing is shown to the user, nothing is started but what
D-Bus activation starts for any portal client.

It sits with the wlroots probe because the wlroots route is asked first; its
imports beyond the standard library are made when needed, so importing it costs
nothing on a desktop that is not Wayland.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from holodesk.platform.backend_env import BACKEND_ENV
from holodesk.platform.errors import PlatformError
from holodesk.platform.wayland.choice import INPUT_ENV, choose
from holodesk.platform.wayland.session import detect_wayland
from holodesk.platform.wlroots.connection import NO_DISPLAY_FIX

NOTHING = "nothing: no root, no /dev/uinput, no dialog (any client may bind these protocols)"
UINPUT_DEVNODE = "/dev/uinput"


@dataclass(frozen=True)
class Route:
    """The route taken, the backend that takes it, and why."""

    name: str  # wlroots, x11, portal, uinput, or none
    backend: str  # the platform backend: wlroots, x11, wayland, or "" for none
    why: str
    approval: str  # what a person must approve or grant; NOTHING when nothing
    usable: bool = True  # False: no route works here until `approval` is done
    asks: bool = False  # True: usable, but a person must answer a dialog at the first run


def wayland_route(
    environ: Mapping[str, str] | None = None,
    *,
    token_path: Path | None = None,
    uinput_devnode: str = UINPUT_DEVNODE,
) -> Route | None:
    """The route for this environment's Wayland session, or None when it is not one."""
    env = os.environ if environ is None else environ
    session = detect_wayland(env)
    if session is None:
        return None
    choice = choose(env)  # the backend choice's own rule, so both say the same
    if choice.backend == "wlroots":
        return Route("wlroots", "wlroots", choice.why, NOTHING)
    if choice.backend == "x11":
        if not session.has_xwayland:
            return Route("none", "", choice.why, NO_DISPLAY_FIX, usable=False)
        why = f"{choice.why}: the x11 backend"
        return Route("x11", "x11", why, "nothing (the X server admits this user's clients)")
    lacking = choice.why
    if session.has_xwayland:
        lacking += (
            f" (XWayland at DISPLAY={session.xwayland_display} is not used: x11 input "
            f"reaches X11 apps only; {BACKEND_ENV}=x11 chooses it)"
        )
    pinned = env.get(INPUT_ENV, "").strip().lower()
    if pinned == "uinput":
        return _uinput(f"{lacking}; {INPUT_ENV}=uinput", uinput_devnode)
    portal = _portal(env, token_path)
    if portal.offered:
        why = f"{lacking}; {portal.why}"
        return Route("portal", "wayland", why, portal.approval, asks=portal.asks)
    if pinned == "portal":
        why = f"{lacking}; {INPUT_ENV}=portal, but {portal.why}"
        fix = "offer RemoteDesktop (GNOME, KDE Plasma), or unset " + INPUT_ENV
        return Route("none", "", why, fix, usable=False)
    return _uinput(f"{lacking}; {portal.why}", uinput_devnode)


@dataclass(frozen=True)
class _Portal:
    """What the portal route's status check found, in the doctor's words."""

    offered: bool  # RemoteDesktop (keyboard and pointer) and ScreenCast are there
    why: str
    approval: str = ""
    asks: bool = False


def _portal(env: Mapping[str, str], token_path: Path | None) -> _Portal:
    """The portal route's status (`portal_route_status`: property reads only, no dialog).

    The PipeWire reader missing does not rule the route out: the backend then
    reads frames through the Screenshot portal, so that is said, with its fix.
    """
    try:
        from holodesk.platform.wayland.dbus import session_bus_address
        from holodesk.platform.wayland.pipewire import gst_problems
        from holodesk.platform.wayland.portal_route import portal_route_status
        from holodesk.platform.wayland.tokens import TokenStore, default_token_path
    except ImportError as error:
        return _Portal(
            False, f"the portal cannot be asked: {error} (install holodesk-platform[wayland])"
        )
    try:
        address = session_bus_address(env)
    except PlatformError as error:
        return _Portal(False, f"the portal cannot be asked: {error}")
    path = token_path or default_token_path()
    status = portal_route_status(address, TokenStore(path), environ=env)
    reader = gst_problems()
    missing = [problem for problem in status.problems if problem not in reader]
    if missing:
        return _Portal(False, "; ".join(cause for cause, _fix in missing))
    offered = (
        f"the desktop portal offers RemoteDesktop version {status.remote_desktop_version} "
        f"(keyboard and pointer) and ScreenCast version {status.screencast_version}"
    )
    if reader:
        frames = "; ".join(f"{cause} (fix: {fix})" for cause, fix in reader)
        offered += f"; frames through the Screenshot portal instead: {frames}"
    else:
        offered += "; frames from the session's PipeWire stream"
        if status.kwin_capture:
            offered += f" ({status.kwin_capture})"
    if status.notice:
        return _Portal(True, offered, status.notice)
    if not status.approval:
        kept = (
            f"nothing now: a restore token from an earlier approval is kept in {path}; if the "
            "desktop has forgotten it, its dialog asks once more"
        )
        return _Portal(True, offered, kept)
    if status.persists:
        approval = f"{status.approval} in {path}, so later sessions start without asking"
    else:
        approval = status.approval
    return _Portal(True, offered, approval, asks=True)


def _uinput(why: str, devnode: str) -> Route:
    try:
        from holodesk.platform.wayland.uinput import uinput_problems
    except ImportError as error:
        fix = f"install holodesk-platform[wayland] (python-evdev): {error}"
        return Route("uinput", "wayland", why, fix, usable=False)
    problems = uinput_problems(devnode)
    if not problems:
        granted = f"nothing more: this user may write to {devnode} (types US-layout keys only)"
        return Route("uinput", "wayland", f"{why}: the uinput route", granted)
    causes = "; ".join(cause for cause, _ in problems)
    fixes = "; ".join(fix for _, fix in problems)
    return Route("uinput", "wayland", f"{why}: the uinput route, but {causes}", fixes, False)
