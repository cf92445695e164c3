"""The Linux Wayland backend: xdg-desktop-portal over D-Bus, or uinput for input.

Wayland gives clients no way to read the screen or inject input; the desktop's
portal (xdg-desktop-portal, spoken over the session bus with jeepney, pure
Python) does, with the user's consent:

- route "portal": one RemoteDesktop session (GNOME and KDE Plasma offer it) for
  input and frames: the frames come from its PipeWire ScreenCast stream, read by
  a gst-launch child (`holodesk.platform.wayland.portal_route`), so no Screenshot
  portal is needed (a bare mutter has none). Where that reader cannot run
  (`gst_problems()`: no gst-launch-1.0 or no pipewiresrc), or `capture` says so,
  frames come from the Screenshot portal instead, cropped per display; on a
  KWin whose streams carry nothing (headless outputs), from KWin's ScreenShot2;
  keys go as keysyms, which GNOME and KDE Plasma 5 type only where their keymap
  has a key: input with any other is refused before it is sent (`portal_keysyms`);
- route "uinput": kernel virtual devices, for compositors that offer neither a
  RemoteDesktop portal nor the wlroots protocols (those get the wlroots backend:
  sway, Hyprland, ...); needs /dev/uinput; types only what the desktop's keyboard
  layout has keys for (its keymap, read from the compositor); frames from the
  Screenshot portal;
- consent is asked once and remembered through a restore token where the portal
  keeps one (RemoteDesktop version 2+; Debian 12's 1.16 asks at every start).

The route: the `input` argument, else $HOLODESK_WAYLAND_INPUT, else "auto":
the portal when it offers RemoteDesktop, else uinput. Auto never falls back when
the user refused consent: that answer stands.

The PipeWire route ran on real headless mutter 43 and KWin 5.27
(tests/platform/wayland/test_portal_*.py); the Screenshot route runs against a
stand-in portal on Xvfb (tests/support/portal_standin.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from holodesk.platform.base import Backend, InputDriver
from holodesk.platform.errors import BackendUnavailableError, CaptureError, PlatformError
from holodesk.platform.wayland.choice import INPUT_ENV
from holodesk.platform.wayland.dbus import BusUnavailableError, PortalBus, session_bus_address
from holodesk.platform.wayland.kwin_screenshot import KWinScreenshots, ScreenshotRefusedError
from holodesk.platform.wayland.layout import DesktopLayout, Monitor, measure_scale
from holodesk.platform.wayland.output_geometry import compositor_outputs, logical_by_outputs
from holodesk.platform.wayland.pipewire import GST_LAUNCH, gst_problems
from holodesk.platform.wayland.portal import (
    DEFAULT_CONSENT_TIMEOUT_S,
    NO_BUS_FIX,
    PORTAL_MISSING_FIX,
    SCREENSHOT_INTERFACE,
    PortalUnavailableError,
    RemoteDesktopSession,
    ScreenCastSession,
    interface_version,
    problem_for,
)
from holodesk.platform.wayland.portal_input import (
    DEFAULT_SMOOTH_STEP_PX,
    SCROLL_MODES,
    PortalInput,
)
from holodesk.platform.wayland.portal_keysyms import KeysymSource, portal_keysyms
from holodesk.platform.wayland.portal_route import open_portal_route
from holodesk.platform.wayland.screenshot import (
    DEFAULT_SCREENSHOT_TIMEOUT_S,
    DesktopShots,
    PortalScreenshots,
    WaylandScreen,
)
from holodesk.platform.wayland.tokens import TokenStore, default_token_path

if TYPE_CHECKING:
    from holodesk.platform.wayland.uinput import DeviceFactory

INPUT_ROUTES = ("auto", "portal", "uinput")
CAPTURE_MODES = ("auto", "pipewire", "kwin", "screenshot")
DEFAULT_UINPUT_DEVNODE = "/dev/uinput"
DEFAULT_DEVICE_SETTLE_S = 1.0

Problem = tuple[str, str]


def create(
    input: str | None = None,
    *,
    bus_address: str | None = None,
    token_path: str | os.PathLike[str] | None = None,
    scale_factor: float | None = None,
    scroll: str = "discrete",
    smooth_step_px: float = DEFAULT_SMOOTH_STEP_PX,
    uinput_devnode: str = DEFAULT_UINPUT_DEVNODE,
    uinput_factory: DeviceFactory | None = None,
    device_settle_s: float = DEFAULT_DEVICE_SETTLE_S,
    consent_timeout_s: float = DEFAULT_CONSENT_TIMEOUT_S,
    screenshot_timeout_s: float = DEFAULT_SCREENSHOT_TIMEOUT_S,
    keep_screenshots: bool = False,
    capture: str = "auto",
    gst_launch: str = GST_LAUNCH,
    environ: Mapping[str, str] | None = None,
    keysyms: KeysymSource | None = None,
) -> Backend:
    """Open the desktop through the portal on the session bus (default: this session's).

    `input`: "portal", "uinput" or "auto" (default $HOLODESK_WAYLAND_INPUT, else auto).
    `token_path`: where restore tokens live (default under $XDG_STATE_HOME/holodesk).
    `scale_factor`: physical pixels per logical pixel; measured with one screenshot
    when not given. `scroll`: "discrete" wheel notches or "smooth" pixels
    (`smooth_step_px` per notch). `uinput_devnode`, `uinput_factory` (an
    evdev.UInput stand-in, for tests) and `device_settle_s`: the uinput route.
    `capture`: where frames come from: "pipewire" (the portal session's
    stream, read by `gst_launch`; the scale is the stream's, so `scale_factor`
    is not used), "kwin" (KWin's ScreenShot2, `kwin_screenshot`), "screenshot"
    (the Screenshot portal), or "auto": PipeWire when its reader can run here
    (KWin's ScreenShot2 when a KWin's stream sends nothing), else Screenshot.
    `keysyms`: which keys the portal's desktop types (default: its keymap, read
    from `environ`'s WAYLAND_DISPLAY, says: `portal_keysyms`).
    """
    env = os.environ if environ is None else environ
    route = _route(input, env)
    if scale_factor is not None and scale_factor <= 0:
        raise ValueError(f"scale_factor must be positive, not {scale_factor}")
    # Checked before any consent dialog, like every argument.
    if scroll not in SCROLL_MODES:
        raise ValueError(f"scroll must be one of {', '.join(SCROLL_MODES)}, not {scroll!r}")
    if capture not in CAPTURE_MODES:
        raise ValueError(f"capture must be one of {', '.join(CAPTURE_MODES)}, not {capture!r}")
    try:
        address = bus_address or session_bus_address(env)
    except BusUnavailableError as error:
        raise BackendUnavailableError([(str(error), NO_BUS_FIX)], backend="wayland") from error
    tokens = TokenStore(Path(token_path) if token_path else default_token_path())
    if route != "uinput" and (capture == "kwin" or _streams_readable(capture, gst_launch)):
        backend = _session_route(
            route,
            address,
            tokens,
            consent_timeout_s,
            scroll,
            smooth_step_px,
            gst_launch,
            capture,
            env,
            keysyms,
        )
        if backend is not None:
            return backend
    shots, close_shots = _desktop_shots(capture, address, screenshot_timeout_s, keep_screenshots)
    try:
        uinput = _Uinput(uinput_devnode, uinput_factory, device_settle_s, env)
        session = _portal_session(route, address, tokens, consent_timeout_s, uinput)
        try:
            if session is not None:
                monitors: list[Monitor] | None = session.monitors
            else:
                monitors = _screencast_monitors(address, tokens, consent_timeout_s)
            if monitors is not None:
                monitors = list(logical_by_outputs(monitors, compositor_outputs(env)))
            layout = _layout(monitors, shots, scale_factor)
            if session is not None:
                driver: InputDriver = PortalInput(
                    session,
                    lambda: layout,
                    keysyms=keysyms or portal_keysyms(session.bus, env),
                    scroll=scroll,
                    smooth_step_px=smooth_step_px,
                )
            else:
                driver = uinput.open(layout)
        except BaseException:
            if session is not None:
                session.close()
            raise
        return Backend(
            name="wayland",
            os="linux",
            screen=WaylandScreen(shots, lambda: layout, on_close=close_shots),
            input=driver,
            # Neither route can read the pointer back; positions are our own moves.
            observes_user_pointer=False,
        )
    except BaseException:
        close_shots()
        raise


def _desktop_shots(
    capture: str, address: str, timeout_s: float, keep_files: bool
) -> tuple[DesktopShots, Callable[[], None]]:
    """Whole-desktop screenshots, KWin's when `capture` says so, else the portal's; and
    how to close their bus connection."""
    try:
        if capture == "kwin":
            kwin = KWinScreenshots(address, timeout_s=timeout_s)
            return kwin, kwin.close
        bus = PortalBus(address)
    except BusUnavailableError as error:
        raise BackendUnavailableError([(str(error), NO_BUS_FIX)], backend="wayland") from error
    try:
        _check_screenshot(bus)
    except BaseException:
        bus.close()
        raise
    return PortalScreenshots(bus, timeout_s=timeout_s, keep_files=keep_files), bus.close


def _streams_readable(capture: str, gst_launch: str) -> bool:
    """Whether the portal route reads its frames from PipeWire (else Screenshot)."""
    if capture == "screenshot":
        return False
    problems = gst_problems(gst_launch)
    if capture == "pipewire" and problems:
        raise BackendUnavailableError(
            [(f"capture='pipewire': {cause}", fix) for cause, fix in problems], backend="wayland"
        )
    return not problems


def _session_route(
    route: str,
    address: str,
    tokens: TokenStore,
    consent_timeout_s: float,
    scroll: str,
    smooth_step_px: float,
    gst_launch: str,
    capture: str,
    env: Mapping[str, str],
    keysyms: KeysymSource | None,
) -> Backend | None:
    """The portal route, frames from its session; None when auto finds no RemoteDesktop.

    A refusal, a missing approval or an unreadable stream is reported, not
    papered over with another route.
    """
    try:
        return open_portal_route(
            address,
            tokens,
            consent_timeout_s=consent_timeout_s,
            scroll=scroll,
            smooth_step_px=smooth_step_px,
            gst_launch=gst_launch,
            capture=capture,
            environ=env,
            keysyms=keysyms,
        )
    except PortalUnavailableError as error:
        if route == "auto" and error.not_offered:
            return None  # the uinput route, with Screenshot frames
        raise BackendUnavailableError([error.problem], backend="wayland") from error
    except BusUnavailableError as error:
        raise BackendUnavailableError([(str(error), NO_BUS_FIX)], backend="wayland") from error
    except ScreenshotRefusedError as error:
        raise BackendUnavailableError([(str(error), error.fix)], backend="wayland") from error
    except CaptureError as error:
        raise BackendUnavailableError(
            [
                (
                    f"the screen-cast stream could not be read: {error}",
                    "check that PipeWire runs in this session (systemctl --user status "
                    "pipewire), or pass capture='screenshot' to read frames through the "
                    "Screenshot portal",
                )
            ],
            backend="wayland",
        ) from error


def _route(name: str | None, env: Mapping[str, str]) -> str:
    source = "input"
    if name is None:
        name = env.get(INPUT_ENV, "").strip() or "auto"
        source = INPUT_ENV
    route = name.strip().lower()
    if route not in INPUT_ROUTES:
        raise BackendUnavailableError(
            [(f"{source}={name!r} is not an input route", f"use one of {', '.join(INPUT_ROUTES)}")],
            backend="wayland",
        )
    return route


def _check_screenshot(bus: PortalBus) -> None:
    try:
        version = interface_version(bus, SCREENSHOT_INTERFACE)
    except PlatformError as error:
        raise BackendUnavailableError(
            [problem_for(error, "screen capture")], backend="wayland"
        ) from error
    if version is None:
        raise BackendUnavailableError(
            [
                (
                    "the desktop portal offers no Screenshot interface, so the screen cannot "
                    "be read",
                    PORTAL_MISSING_FIX,
                )
            ],
            backend="wayland",
        )


@dataclass(frozen=True)
class _Uinput:
    """How to make the uinput driver, and whether it could be made here."""

    devnode: str
    factory: DeviceFactory | None
    settle_s: float
    environ: Mapping[str, str]  # its WAYLAND_DISPLAY's compositor gives the keymap

    def problems(self) -> list[Problem]:
        if self.factory is not None:
            return []  # a stand-in device: nothing on this machine to check
        from holodesk.platform.wayland.uinput import uinput_problems

        return [_uinput_problem(c, f) for c, f in uinput_problems(self.devnode)]

    def open(self, layout: DesktopLayout) -> InputDriver:
        from evdev import UInput

        from holodesk.platform.wayland.uinput import UinputInput, UinputUnavailableError
        from holodesk.platform.wayland.uinput_strokes import uinput_strokes

        try:
            return UinputInput(
                layout.desktop(),
                devnode=self.devnode,
                factory=self.factory or UInput,
                device_settle_s=self.settle_s,
                strokes=lambda: uinput_strokes(self.environ),
            )
        except UinputUnavailableError as error:
            raise BackendUnavailableError(
                [_uinput_problem(c, f) for c, f in error.problems], backend="wayland"
            ) from error


def _uinput_problem(cause: str, fix: str) -> Problem:
    return f"uinput route: {cause}", fix


def _portal_session(
    route: str, address: str, tokens: TokenStore, consent_timeout_s: float, uinput: _Uinput
) -> RemoteDesktopSession | None:
    """The RemoteDesktop session, or None where input goes through uinput.

    Auto falls back to uinput only when the portal has no RemoteDesktop: a
    refusal or a failure is reported, not papered over.
    """
    problems: list[Problem] = []
    if route != "uinput":
        try:
            # Its own connection: a portal session belongs to the connection that made it.
            return RemoteDesktopSession.start(
                PortalBus(address), tokens, consent_timeout_s=consent_timeout_s
            )
        except PortalUnavailableError as error:
            problems.append(error.problem)
            if route == "portal" or not error.not_offered:
                raise BackendUnavailableError(problems, backend="wayland") from error
    # Checked before any consent dialog, so a user is not asked for nothing.
    found = uinput.problems()
    if found:
        # Nothing works: every route tried, each with its fix.
        raise BackendUnavailableError([*problems, *found], backend="wayland")
    return None


def _screencast_monitors(
    address: str, tokens: TokenStore, consent_timeout_s: float
) -> list[Monitor] | None:
    bus = PortalBus(address)
    try:
        return ScreenCastSession.monitors(bus, tokens, consent_timeout_s=consent_timeout_s)
    except PortalUnavailableError as error:
        raise BackendUnavailableError([error.problem], backend="wayland") from error
    finally:
        bus.close()


def _layout(
    monitors: list[Monitor] | None, shots: DesktopShots, scale_factor: float | None
) -> DesktopLayout:
    """The layout, its scale measured on one screenshot unless given.

    The screenshot also surfaces a refused or broken capture at open, not at the
    first frame. Without monitors (no ScreenCast), one display the screenshot's size.
    """
    if monitors is not None and scale_factor is not None:
        return DesktopLayout(tuple(monitors), scale_factor)
    try:
        image_size = shots.take().size
    except CaptureError as error:
        raise BackendUnavailableError(
            [
                (
                    f"the first screenshot failed: {error}",
                    "allow holodesk to take screenshots when the desktop asks, and check that "
                    "the compositor's portal backend implements Screenshot",
                )
            ],
            backend="wayland",
        ) from error
    if monitors is None:
        return DesktopLayout((Monitor(0, 0, 0, *image_size),), 1.0)
    return DesktopLayout(tuple(monitors), scale_factor or measure_scale(monitors, image_size))
