"""Where a portal session's pixels come from: its PipeWire streams, or KWin's ScreenShot2.

The streams are the route's capture (`cast_screen`): a frame whenever the
screen changes, no call per grab. A KWin whose outputs are headless
(`kwin_wayland --virtual`, what a KDE desktop for agents runs) never casts
them (`kwin_screenshot` says why), so on a bus where KWin offers ScreenShot2,
"auto" gives the streams a moment to send their first frame (KWin repaints
the output when a stream starts, so one that works sends it at once) and,
when none comes, takes KWin's screenshots instead, saying so in the log.
"pipewire" keeps the streams whatever they send; "kwin" goes straight to
ScreenShot2.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from holodesk.platform.base import ScreenSource
from holodesk.platform.errors import CaptureError
from holodesk.platform.wayland.cast_screen import CastScreen
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.kwin_screenshot import (
    AUTHORIZE_FIX,
    KWinScreenshots,
    ScreenshotRefusedError,
)
from holodesk.platform.wayland.layout import DesktopLayout, Monitor, bounding_box, measure_scale
from holodesk.platform.wayland.output_geometry import compositor_outputs, logical_by_outputs
from holodesk.platform.wayland.pipewire import DEFAULT_FIRST_FRAME_TIMEOUT_S, GST_LAUNCH
from holodesk.platform.wayland.portal import RemoteDesktopSession
from holodesk.platform.wayland.screenshot import WaylandScreen

log = logging.getLogger(__name__)

SESSION_CAPTURES = ("auto", "pipewire", "kwin")
DEFAULT_STREAM_PROBE_S = 3.0


def open_session_screen(
    session: RemoteDesktopSession,
    address: str,
    *,
    capture: str = "auto",
    gst_launch: str = GST_LAUNCH,
    first_frame_timeout_s: float = DEFAULT_FIRST_FRAME_TIMEOUT_S,
    stream_probe_s: float = DEFAULT_STREAM_PROBE_S,
    environ: Mapping[str, str] | None = None,
) -> tuple[ScreenSource, DesktopLayout]:
    """The screen of a started session and its layout (for the input's coordinates).

    `environ`'s WAYLAND_DISPLAY (default this process's) names the compositor asked
    for its outputs' logical geometry (`output_geometry`). Raises CaptureError
    (ScreenshotRefusedError when KWin will not let us in).
    """
    if capture not in SESSION_CAPTURES:
        raise ValueError(f"capture must be one of {', '.join(SESSION_CAPTURES)}, not {capture!r}")
    monitors = logical_by_outputs(session.monitors, compositor_outputs(environ))
    if capture == "kwin":
        return kwin_screen(address, monitors)
    cast = CastScreen(
        monitors,
        session.open_pipewire_remote,
        gst_launch=gst_launch,
        first_frame_timeout_s=first_frame_timeout_s,
    )
    try:
        if capture == "pipewire" or not _kwin_offers_screenshots(address):
            return cast, cast.layout
        if cast.sends_frames(stream_probe_s):
            return cast, cast.layout
        log.warning(
            "KWin's screen-cast streams sent no frame in %g s (its outputs are headless): "
            "reading the screen through KWin's ScreenShot2 instead",
            stream_probe_s,
        )
        try:
            screen = kwin_screen(address, monitors)
        except ScreenshotRefusedError as error:
            raise ScreenshotRefusedError(
                f"KWin's screen-cast stream sent no frame in {stream_probe_s:g} s (a KWin with "
                f"headless outputs, --virtual, never casts them), and {error}"
            ) from error
    except BaseException:
        cast.close()
        raise
    cast.close()
    return screen


def kwin_screen(address: str, monitors: Sequence[Monitor]) -> tuple[ScreenSource, DesktopLayout]:
    """Screenshots from KWin's ScreenShot2; the scale measured on the first one."""
    shots = KWinScreenshots(address)
    try:
        image, kwin_scale = shots.take_scaled()
        logical = logical_monitors(monitors, image.size, kwin_scale)
        layout = DesktopLayout(logical, measure_scale(logical, image.size))
    except BaseException:
        shots.close()
        raise
    return WaylandScreen(shots, lambda: layout, on_close=shots.close), layout


def logical_monitors(
    monitors: Sequence[Monitor], image_size: tuple[int, int], kwin_scale: float
) -> tuple[Monitor, ...]:
    """The portal's monitors in logical units, which its pointer positions are in.

    xdg-desktop-portal-kde 5.27 gives each stream its output's pixel size but
    takes NotifyPointerMotionAbsolute in logical units (KWin's fake input): on an
    output at 1.5 the layout it reports is the screenshot's size, not a third
    smaller. KWin's own scale for the screenshot tells the two apart; monitors
    already logical (a portal that follows the spec) are kept.
    """
    box = bounding_box([m.logical for m in monitors])
    if kwin_scale == 1.0 or abs(box.width - image_size[0]) > 1:
        return tuple(monitors)
    log.info("the portal's monitors are in pixels at scale %g: using them in logical units",
             kwin_scale)  # fmt: skip
    return tuple(
        replace(
            m,
            x=round(m.x / kwin_scale),
            y=round(m.y / kwin_scale),
            width=round(m.width / kwin_scale),
            height=round(m.height / kwin_scale),
        )
        for m in monitors
    )


def _kwin_offers_screenshots(address: str) -> bool:
    bus = PortalBus(address)
    try:
        return KWinScreenshots.offered(bus)
    finally:
        bus.close()


def kwin_capture_note(address: str) -> str:
    """For `holodesk doctor`: on a KWin, whether its ScreenShot2 would let us in should its
    stream send nothing (one screenshot, shown to nobody); "" where no KWin offers it."""
    if not _kwin_offers_screenshots(address):
        return ""
    shots = KWinScreenshots(address)
    try:
        shots.take()
    except ScreenshotRefusedError:
        return (
            "KWin refuses holodesk its ScreenShot2, so where KWin's stream sends no frame "
            f"(headless outputs, --virtual) the screen cannot be read: {AUTHORIZE_FIX}"
        )
    except CaptureError as error:
        return f"KWin's ScreenShot2 failed ({error}), so a stream without frames has no stand-in"
    finally:
        shots.close()
    return (
        "where KWin's stream sends no frame (headless outputs), KWin's ScreenShot2, which "
        "lets holodesk in"
    )
