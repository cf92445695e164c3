"""The portal route on a real headless KDE: KWin 5.27 (--virtual), xdg-desktop-portal-kde, PipeWire.

One RemoteDesktop session for the module, the frame checks and the platform
conformance suite against the Tk probe on KWin's XWayland
(tests/platform/wayland/portal_suite.py). KWin's stream carries no pixels here
(test_kwin_streams_no_pixels), so the route's auto capture reads KWin's
ScreenShot2 instead, which this KWin lets anyone use (started with
KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1, as a headless KWin for agents is);
one that does not is test_portal_kwin_native.py's.

Consent: xdg-desktop-portal-kde 5.27 starts an unsandboxed program's session
without a dialog and notifies instead (test_portal_kwin_consent.py), so nobody
has to answer here; the dialog path is tested on GNOME.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, Region
from holodesk.platform.errors import CaptureError
from holodesk.platform.wayland.cast_screen import CastScreen
from holodesk.platform.wayland.screenshot import WaylandScreen
from holodesk.platform.wayland.tokens import TokenStore
from holodesk.platform.wlroots.route import wayland_route
from tests.platform.conformance import SCROLLS
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.kde_portal import kde_route, open_kde_route
from tests.platform.wayland.portal_suite import (  # noqa: F401 - collected here
    US_KEYMAP_REFUSALS,
    SettledTarget,
    colours,
    conformance,
    probe,
    rgb,
    target,
    test_displays_come_from_the_stream,
    test_drag_path,
    test_frames_follow_what_input_changes,
    test_frames_show_the_probe_window,
)
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin", screenshots_for_anyone=True)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def backend(
    desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    with kde_route(desktop, tmp_path_factory) as opened:
        yield opened


def test_the_route_reads_kwins_screenshots(backend: Backend) -> None:
    # The frame checks above pass on these; this says where they came from.
    assert isinstance(backend.screen, WaylandScreen)


def test_capture_kwin_reads_kwins_screenshots_from_the_start(
    desktop: HeadlessDesktop,
    probe: ProbeApp,  # noqa: F811
    tmp_path: Path,
) -> None:
    shot = open_kde_route(desktop, TokenStore(tmp_path / "tokens.json"), capture="kwin")
    try:
        assert isinstance(shot.screen, WaylandScreen)
        swatch = probe.widgets["swatch"]
        image = shot.screen.grab(Region(swatch.x + 5, swatch.y + 5, 4, 4))
        assert colours(image) == {rgb(probe.colors["swatch"])}
    finally:
        shot.close()


def test_doctor_says_kwins_screenshots_stand_in(
    desktop: HeadlessDesktop, backend: Backend, tmp_path: Path
) -> None:
    route = wayland_route(desktop.environ(), token_path=tmp_path / "tokens.json")
    assert route is not None
    assert (route.name, route.backend) == ("portal", "wayland")
    assert "KWin's ScreenShot2, which lets holodesk in" in route.why, route.why


def test_kwin_streams_no_pixels(
    desktop: HeadlessDesktop,
    backend: Backend,
    target: SettledTarget,  # noqa: F811
    tmp_path: Path,
) -> None:
    # KWin 5.27.5's --virtual output here: the stream negotiates BGRx at the output's
    # size, then sends only empty buffers flagged corrupted (cursor metadata), none with
    # pixels, when windows map or the pointer moves (seen with gst-launch's fakesink
    # silent=false: "0 bytes ... flags: discont corrupted"), with OpenGL (llvmpipe) or
    # QPainter compositing alike. Why (gdb attached to kwin_wayland while a window
    # mapped and the pointer moved 30 times): KWin composited and painted the output
    # 32 times, but never emitted KWin::Output::outputChange, the signal its
    # ScreencastManager records a frame on (0 hits), so no frame was ever recorded;
    # all 30 buffers it queued came from Cursors::positionChanged (cursor-only
    # updates). Its log (QT_LOGGING_RULES=kwin_screencast.debug=true) shows a normal
    # stream: memfd buffers (no DMA-BUF), paused -> streaming, no warning. Asking for
    # cursor_mode Embedded, or nesting KWin on an Xvfb (--x11-display) instead of
    # --virtual, changed nothing. A client cannot change that (the source, 5.27.5's
    # screencastmanager.cpp: only DRM and nested-Wayland outputs emit it); when a KWin
    # sends frames, this fails: then the route's auto capture keeps the stream.
    streamed = open_kde_route(
        desktop, TokenStore(tmp_path / "tokens.json"), capture="pipewire", first_frame_timeout_s=3
    )
    try:
        assert isinstance(streamed.screen, CastScreen)
        assert streamed.screen.displays()[0].bounds == Region(0, 0, 1280, 800)
        backend.input.move(*target.push_button())
        with pytest.raises(CaptureError, match="sent no frame"):
            streamed.screen.grab(Region(0, 0, 10, 10))
        assert streamed.screen.frames() == 0
    finally:
        streamed.close()


# What KWin 5.27 with xdg-desktop-portal-kde 5.27 itself does not do through the portal.
_NO_DISCRETE = (
    "xdg-desktop-portal-kde 5.27 does nothing with NotifyPointerAxisDiscrete (no wheel event "
    "arrives), and its smooth NotifyPointerAxis scrolls the other way, 15 px to a notch"
)
# xdg-desktop-portal-kde 5.27 also types only keysyms its keymap has a key for: the route
# refuses those, before sending anything (US_KEYMAP_REFUSALS).
test_conformance = conformance(
    {
        **{f"scroll-{name}": _NO_DISCRETE for name in SCROLLS},
        "key-down-and-up": (
            "KWin drops a second press of a key already held (the suite's auto-repeat check): "
            "only one B arrives"
        ),
    },
    refused=US_KEYMAP_REFUSALS,
)
