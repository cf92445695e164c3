"""Geometry on a real headless KDE at a fractional scale: KWin 5.27's output at 1.5.

`kwin_wayland --virtual --width 1280 --height 800 --scale 1.5`: an output of
1920x1200 pixels, 1280x800 logical. xdg-desktop-portal-kde 5.27 gives its stream
the output's pixel size but takes pointer positions in logical units, and this
KWin's stream carries no frames, so the route reads KWin's ScreenShot2, whose
scale says which is which (`session_screen.logical_monitors`); the stream route
asks the compositor's xdg-output (`output_geometry`). The native GTK
app, fullscreen, reports each press in surface-local logical pixels with 1/256
precision, so the test can tell which physical pixel the pointer is in: a click
at physical pixel P must land inside P, at its centre.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, Region
from holodesk.platform.wayland.cast_screen import CastScreen
from holodesk.platform.wayland.output_geometry import compositor_outputs
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.kde_portal import kde_route
from tests.platform.wayland.native_app import start_native_app
from tests.platform.wlroots.gtk_probe import GtkProbe, GtkUnavailableError

pytestmark = pytest.mark.portal_desktop

SCALE = 1.5
WIRE_PRECISION = 1 / 256  # wl_fixed_t


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin", screenshots_for_anyone=True, scale=SCALE)
    yield running
    running.stop()


def _inside(desktop: HeadlessDesktop) -> dict[str, str]:
    """An environment inside the desktop's session, for its compositor's outputs."""
    return {"WAYLAND_DISPLAY": str(desktop.runtime_dir / desktop.wayland_display)}


@pytest.fixture(scope="module", params=["screenshot2", "stream"])
def backend(
    request: pytest.FixtureRequest,
    desktop: HeadlessDesktop,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Backend]:
    """Both ways a KDE route learns its units. "screenshot2": the auto route, its
    frames and scale from KWin's ScreenShot2, opened without the Wayland socket (a
    portal reached from outside the session). "stream": the PipeWire route, whose
    frames say 1.0 here, opened inside the session: the compositor's xdg-output
    says the scale (`output_geometry`). This KWin's stream carries no pixels
    (test_portal_kwin.py), but its input and layout are the route's own."""
    if request.param == "screenshot2":
        options: dict[str, object] = {}
    else:
        options = {"capture": "pipewire", "environ": _inside(desktop)}
    with kde_route(desktop, tmp_path_factory, **options) as opened:
        yield opened


@pytest.fixture(scope="module")
def app(
    desktop: HeadlessDesktop, backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GtkProbe]:
    try:
        probe = start_native_app(desktop, tmp_path_factory.mktemp("gtk") / "gtk.log")
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland app cannot run here: {error}")
    _settle(backend, probe)
    yield probe
    probe.stop()


def _settle(backend: Backend, app: GtkProbe, timeout_s: float = 20.0) -> None:
    """Until a motion arrives: the first input to a window still being made fullscreen
    can be lost (native_app.settled_target's reason; its check speaks scale 1)."""
    deadline = time.monotonic() + timeout_s
    step = 0
    while True:
        before = len(app.events("motion"))
        step = step % 20 + 1
        backend.input.move(300 + step, 200 + step)
        try:
            app.wait(lambda n=before: len(app.events("motion")) > n, "a motion", timeout_s=1)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def test_the_display_is_the_outputs_pixels_at_its_scale(backend: Backend) -> None:
    """Proves: the output is reported as its 1920x1200 pixels at scale 1.5, though the
    portal's stream says 1920x1200 in units its pointer calls read as logical."""
    (display,) = backend.screen.displays()
    assert (display.bounds, display.scale_factor) == (Region(0, 0, 1920, 1200), SCALE)


def test_the_compositor_says_its_output_is_1280x800_logical_in_1920x1200_pixels(
    desktop: HeadlessDesktop,
) -> None:
    (output,) = compositor_outputs(_inside(desktop))
    assert (output.logical, output.physical_width, output.physical_height) == (
        Region(0, 0, 1280, 800),
        1920,
        1200,
    )
    assert output.scale == SCALE


def test_a_grab_has_one_image_pixel_per_physical_pixel(backend: Backend) -> None:
    if isinstance(backend.screen, CastScreen):
        pytest.skip("this KWin's stream sends no pixels: test_portal_kwin.py holds that")
    image = backend.screen.grab(Region(0, 0, 1920, 1200))
    assert image.size == (1920, 1200)
    assert backend.screen.grab(Region(1900, 1190, 20, 10)).size == (20, 10)


def _pressed_at(backend: Backend, app: GtkProbe, x: int, y: int) -> tuple[float, float]:
    before = len(app.events("press"))
    backend.input.click(x, y)
    app.wait(lambda: len(app.events("press")) > before, f"the press at {(x, y)}")
    press = app.events("press")[-1]
    return press["x"], press["y"]


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 7, 100, 101])
def test_clicks_land_on_the_logical_pixel_nearest_the_aimed_one(
    backend: Backend, app: GtkProbe, offset: int
) -> None:
    """Proves: at 1.5, through the portal's logical coordinates, a click at physical
    pixel P arrives at the logical pixel nearest P's centre: the layout's scale and
    units are right (a physical-for-logical mix-up would land 50% further out)."""
    x, y = 300 + offset, 200 + offset  # inside the app's canvas
    pressed = _pressed_at(backend, app, x, y)
    for got, aimed in zip(pressed, (x, y), strict=True):
        assert abs(got - (aimed + 0.5) / SCALE) <= 0.5 + WIRE_PRECISION, (pressed, (x, y))


@pytest.mark.xfail(
    strict=True,
    reason=(
        "KWin 5.27 delivers the portal's pointer positions in whole logical pixels (the app "
        "sees 200.0 for 200.33), so at 1.5 one physical pixel in three cannot be hit: 302 "
        "lands in 303 (logical 201 is 301.5, 202 is 303); sway delivers 1/256 (its test)"
    ),
)
def test_clicks_land_on_every_physical_pixel(backend: Backend, app: GtkProbe) -> None:
    hit = []
    for x in range(300, 306):
        pressed_x, _ = _pressed_at(backend, app, x, 200)
        hit.append(math.floor(pressed_x * SCALE))
    assert hit == list(range(300, 306))


def test_without_a_scale_the_portals_pixels_would_miss(tmp_path: Path) -> None:
    """The reason for logical_monitors, on this portal's own report: its stream is the
    output's pixel size, not its logical size."""
    from holodesk.platform.wayland.layout import Monitor
    from holodesk.platform.wayland.session_screen import logical_monitors

    stream = Monitor(37, 0, 0, 1920, 1200)
    assert logical_monitors([stream], (1920, 1200), SCALE) == (Monitor(37, 0, 0, 1280, 800),)
    # A portal that reports logical sizes, as the spec asks, is taken as it is.
    assert logical_monitors([Monitor(37, 0, 0, 1280, 800)], (1920, 1200), SCALE) == (
        Monitor(37, 0, 0, 1280, 800),
    )
    assert logical_monitors([stream], (1920, 1200), 1.0) == (stream,)
