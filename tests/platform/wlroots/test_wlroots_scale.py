"""Geometry on a real sway: outputs at fractional scales (1.5 and 1.25) side by side.

A native Wayland app (GTK) reports each press in surface-local logical pixels with
1/256 precision, so the test can tell exactly which physical pixel the pointer is in:
a click at physical pixel P must land inside P on any output, at any scale, and keep
doing so when the scale changes while the backend is open.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, DisplayInfo, Region
from holodesk.platform.select import open_backend
from tests.platform.wlroots.conftest import start_sway
from tests.platform.wlroots.gtk_probe import GtkProbe, GtkUnavailableError
from tests.platform.wlroots.sway import Sway

pytestmark = pytest.mark.wlroots

# HEADLESS-1: 1920x1200 at 1.5 = 1280x800 logical at (0, 0);
# HEADLESS-2: 1000x800 at 1.25 = 800x640 logical at (1280, 0); physical origin
# 1280 x the largest scale (1.5) = 1920, right where HEADLESS-1's pixels end.
OUTPUTS = (
    "output HEADLESS-1 resolution 1920x1200 position 0,0 scale 1.5",
    "output HEADLESS-2 resolution 1000x800 position 1280,0 scale 1.25",
)
WIRE_PRECISION = 1 / 256  # wl_fixed_t


@pytest.fixture(scope="module")
def scaled_sway() -> Iterator[Sway]:
    running = start_sway(outputs=OUTPUTS, headless_outputs=2)
    yield running
    running.stop()


@pytest.fixture
def backend(scaled_sway: Sway) -> Iterator[Backend]:
    opened = open_backend("wlroots", socket=scaled_sway.wayland_socket)
    yield opened
    opened.close()


def _gtk(sway: Sway, tmp_path: Path, window: Region) -> GtkProbe:
    try:
        return GtkProbe.start(sway, tmp_path / "gtk.log", window)
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland probe cannot run here: {error}")


def test_outputs_are_their_physical_pixels(backend: Backend) -> None:
    """Proves: each output is reported with its mode's pixel size and its fractional
    scale, placed at its logical position times the largest scale: side by side,
    neither overlapping nor apart."""
    assert backend.screen.displays() == [
        DisplayInfo("HEADLESS-1", Region(0, 0, 1920, 1200), 1.5, True, "HEADLESS-1"),
        DisplayInfo("HEADLESS-2", Region(1920, 0, 1000, 800), 1.25, False, "HEADLESS-2"),
    ]


def test_captures_are_physical_size(backend: Backend) -> None:
    """Proves: a capture of each output has one image pixel per physical pixel."""
    for display in backend.screen.displays():
        image = backend.screen.grab(display.bounds)
        assert image.size == (display.bounds.width, display.bounds.height)


def _assert_lands(probe: GtkProbe, backend: Backend, output: DisplayInfo, x: int, y: int) -> None:
    before = len(probe.events("press"))
    backend.input.click(x, y)
    probe.wait(lambda: len(probe.events("press")) > before, f"the press at {(x, y)}")
    press = probe.events("press")[-1]
    logical_x, logical_y = probe.window.x + press["x"], probe.window.y + press["y"]
    # Which physical pixel of its output the pointer is in.
    origin = _logical_origin(output)
    physical_x = output.bounds.x + math.floor((logical_x - origin[0]) * output.scale_factor)
    physical_y = output.bounds.y + math.floor((logical_y - origin[1]) * output.scale_factor)
    assert (physical_x, physical_y) == (x, y), (press, output)
    # And at its centre, as far as the wire's 1/256 lets the app see.
    centre_x = origin[0] + (x - output.bounds.x + 0.5) / output.scale_factor
    assert abs(logical_x - centre_x) <= WIRE_PRECISION


LOGICAL_ORIGINS = {"HEADLESS-1": (0, 0), "HEADLESS-2": (1280, 0)}


def _logical_origin(output: DisplayInfo) -> tuple[float, float]:
    return LOGICAL_ORIGINS[output.display_id]


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 7, 100, 101])
def test_clicks_land_on_the_pixel_at_scale_1_5(
    scaled_sway: Sway, backend: Backend, tmp_path: Path, offset: int
) -> None:
    """Proves: at scale 1.5 (two physical pixels per 1.33 logical), every physical
    pixel, odd or even, is hit inside itself, at its centre."""
    probe = _gtk(scaled_sway, tmp_path, Region(300, 200, 400, 300))
    try:
        output = backend.screen.displays()[0]
        # The drawing area starts below the entry: aim well inside it.
        _assert_lands(probe, backend, output, 450 + offset, 450 + offset)
    finally:
        probe.stop()


def test_clicks_land_on_the_second_output_at_scale_1_25(
    scaled_sway: Sway, backend: Backend, tmp_path: Path
) -> None:
    """Proves: on an output beside a differently scaled one, at 1.25, pixels land too."""
    probe = _gtk(scaled_sway, tmp_path, Region(1400, 100, 400, 300))
    try:
        output = backend.screen.displays()[1]
        # Logical (1400, 100) is physical (1920 + 150, 125) on HEADLESS-2.
        for offset in (60, 61, 62, 63, 64):
            _assert_lands(probe, backend, output, 2070 + offset, 125 + 60 + offset)
    finally:
        probe.stop()


def test_a_scale_change_is_followed(scaled_sway: Sway, tmp_path: Path) -> None:
    """Proves: when the output's scale changes under an open backend (swaymsg), its
    displays and its clicks follow at once."""
    backend = open_backend("wlroots", socket=scaled_sway.wayland_socket)
    probe = _gtk(scaled_sway, tmp_path, Region(300, 200, 400, 300))
    try:
        scaled_sway.command("output HEADLESS-1 scale 1.25")
        probe.place(scaled_sway, Region(300, 200, 400, 300))
        output = backend.screen.displays()[0]
        assert (output.bounds, output.scale_factor) == (Region(0, 0, 1920, 1200), 1.25)
        for offset in (0, 1, 2, 3, 4):
            _assert_lands(probe, backend, output, 420 + offset, 380 + offset)
    finally:
        probe.stop()
        backend.close()
        scaled_sway.command("output HEADLESS-1 scale 1.5")
