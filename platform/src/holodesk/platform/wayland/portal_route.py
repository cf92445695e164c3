"""The portal route as a whole: one RemoteDesktop session for input and frames.

`open_portal_route` starts a RemoteDesktop session with monitor streams (the
consent dialog unless a restore token is honoured), reads the streams' frames
from PipeWire (`cast_screen`) and injects input through the same session
(`portal_input`): no Screenshot portal call, so it works on a bare mutter too,
whose portal backend has no Screenshot of its own. On a KWin whose streams
carry nothing (headless outputs), frames come from KWin's ScreenShot2
(`session_screen`).

`portal_route_status` is the cheap check for `holodesk doctor`: it asks the
portal's properties only (never starts a session, never shows a dialog) and
says whether the route can work here and what a person will have to approve.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.wayland.consent import remote_desktop_consent
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.pipewire import (
    DEFAULT_FIRST_FRAME_TIMEOUT_S,
    GST_LAUNCH,
    gst_problems,
)
from holodesk.platform.wayland.portal import (
    DEFAULT_CONSENT_TIMEOUT_S,
    DEVICE_KEYBOARD,
    DEVICE_POINTER,
    REMOTE_DESKTOP_INTERFACE,
    REMOTE_DESKTOP_MISSING_FIX,
    SCREENCAST_INTERFACE,
    Problem,
    RemoteDesktopSession,
    interface_version,
    problem_for,
)
from holodesk.platform.wayland.portal_input import DEFAULT_SMOOTH_STEP_PX, PortalInput
from holodesk.platform.wayland.portal_keysyms import KeysymSource, portal_keysyms
from holodesk.platform.wayland.session_screen import (
    DEFAULT_STREAM_PROBE_S,
    kwin_capture_note,
    open_session_screen,
)
from holodesk.platform.wayland.tokens import REMOTE_DESKTOP, TokenStore

SHIFT_KEYSYM = 0xFFE1  # Shift_L
KEYMAP_SETTLE_S = 0.3
BLANK_CAPTURE_FIX = (
    "the screen-cast stream is black: unlock the session, and check that the desktop still "
    "shares the screen (GNOME's top bar shows a sharing indicator; stop and reopen to ask again)"
)


def open_portal_route(
    address: str,
    tokens: TokenStore,
    *,
    consent_timeout_s: float = DEFAULT_CONSENT_TIMEOUT_S,
    interactive: bool = True,
    scroll: str = "discrete",
    smooth_step_px: float = DEFAULT_SMOOTH_STEP_PX,
    gst_launch: str = GST_LAUNCH,
    first_frame_timeout_s: float = DEFAULT_FIRST_FRAME_TIMEOUT_S,
    capture: str = "auto",
    stream_probe_s: float = DEFAULT_STREAM_PROBE_S,
    environ: Mapping[str, str] | None = None,
    keysyms: KeysymSource | None = None,
) -> Backend:
    """A Backend over one RemoteDesktop session on the bus at `address`.

    `capture`: "auto", "pipewire" or "kwin" (`session_screen`); `environ` (default
    this process's): its WAYLAND_DISPLAY is asked for the outputs' geometry and the
    keymap, its XDG_CURRENT_DESKTOP names the desktop. `keysyms`: which keys the
    desktop types (default: its keymap says, `portal_keysyms`). Raises
    PortalUnavailableError (ConsentNeededError when a person must approve) or
    CaptureError (the screen cannot be read), each with its fix.
    """
    session = RemoteDesktopSession.start(
        PortalBus(address),
        tokens,
        consent_timeout_s=consent_timeout_s,
        interactive=interactive,
        environ=environ,
    )
    try:
        screen, layout = open_session_screen(
            session,
            address,
            capture=capture,
            gst_launch=gst_launch,
            first_frame_timeout_s=first_frame_timeout_s,
            stream_probe_s=stream_probe_s,
            environ=environ,
        )
    except BaseException:
        session.close()
        raise
    typed: KeysymSource | None = None
    try:
        _wake_keyboard(session)
        # Once the session's keyboard exists: a headless mutter has no keymap before.
        typed = keysyms or portal_keysyms(session.bus, environ)
        driver = PortalInput(
            session, lambda: layout, keysyms=typed, scroll=scroll, smooth_step_px=smooth_step_px
        )
    except BaseException:
        if typed is not None:
            typed.close()
        screen.close()
        session.close()
        raise
    return Backend(
        name="wayland",
        os="linux",
        screen=screen,
        input=driver,
        # The portal never reports the pointer: positions are our own moves.
        observes_user_pointer=False,
        blank_capture_fix=BLANK_CAPTURE_FIX,
    )


def _wake_keyboard(session: RemoteDesktopSession) -> None:
    """Make the compositor create the session's virtual keyboard now, not at the first key.

    mutter makes it at the first keysym and sends every client its keymap then;
    XWayland drops the keys that arrive with that keymap change (seen on mutter 43:
    the first text typed after the session started never reached an X11 app). A
    Shift tap, and a moment for the keymap to reach the clients, costs 0.3 s once.
    """
    session.keysym(SHIFT_KEYSYM, True)
    session.keysym(SHIFT_KEYSYM, False)
    time.sleep(KEYMAP_SETTLE_S)


@dataclass(frozen=True)
class PortalRouteStatus:
    """What `holodesk doctor` says about the portal route, without starting it.

    `usable`: nothing is missing (a person may still have to approve).
    `problems`: (cause, fix) for each thing missing. `approval`: what a person
    must approve, and how often; empty when a stored token should let it start
    silently, or when the desktop does not ask (`notice` then says what it
    shows instead). `persists`: whether the portal keeps that answer (restore
    tokens).
    """

    usable: bool
    problems: list[Problem] = field(default_factory=list)
    approval: str = ""
    notice: str = ""
    persists: bool = False
    remote_desktop_version: int | None = None
    screencast_version: int | None = None
    # On a KWin: what frames come from when its stream sends none (`kwin_capture_note`).
    kwin_capture: str = ""


def portal_route_status(
    address: str,
    tokens: TokenStore,
    *,
    gst_launch: str = GST_LAUNCH,
    environ: Mapping[str, str] | None = None,
) -> PortalRouteStatus:
    """Whether the portal route can work on the bus at `address`, and what a person must do.

    `environ` (default this process's) tells which desktop answers (`consent`).
    """
    problems: list[Problem] = list(gst_problems(gst_launch))
    try:
        bus = PortalBus(address)
    except PlatformError as error:
        return PortalRouteStatus(False, [*problems, problem_for(error, "remote control")])
    try:
        remote = interface_version(bus, REMOTE_DESKTOP_INTERFACE)
        cast = interface_version(bus, SCREENCAST_INTERFACE)
        devices = (
            int(bus.property(REMOTE_DESKTOP_INTERFACE, "AvailableDeviceTypes")) if remote else 0
        )
        consent = remote_desktop_consent(bus, environ)
    except PlatformError as error:
        return PortalRouteStatus(False, [*problems, problem_for(error, "remote control")])
    finally:
        bus.close()
    if remote is None:
        problems.append(
            ("the desktop portal offers no RemoteDesktop interface", REMOTE_DESKTOP_MISSING_FIX)
        )
    elif devices & (DEVICE_KEYBOARD | DEVICE_POINTER) != DEVICE_KEYBOARD | DEVICE_POINTER:
        problems.append(
            (
                f"the portal's RemoteDesktop offers device types {devices:#x}, not both "
                "keyboard and pointer",
                REMOTE_DESKTOP_MISSING_FIX,
            )
        )
    if cast is None:
        problems.append(
            ("the desktop portal offers no ScreenCast interface", REMOTE_DESKTOP_MISSING_FIX)
        )
    persists = (remote or 0) >= 2
    if not consent.asks:
        approval = ""
    elif not persists:
        approval = (
            "a person must answer the desktop's 'Remote desktop' dialog (allow remote "
            "interaction, then Share) at every start: this portal's RemoteDesktop (version "
            f"{remote}) keeps no restore token; xdg-desktop-portal 1.17+ does"
        )
    elif tokens.get(REMOTE_DESKTOP) is None:
        approval = (
            "a person must answer the desktop's 'Remote desktop' dialog once (allow remote "
            "interaction, then Share); the answer is kept as a restore token"
        )
    else:
        approval = ""
    kwin = kwin_capture_note(address) if not problems else ""
    return PortalRouteStatus(
        not problems, problems, approval, consent.notice, persists, remote, cast, kwin
    )
