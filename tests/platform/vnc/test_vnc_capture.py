"""Capture over VNC from a real Xvnc: pixels, freshness, encodings, resizes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from holodesk.platform.base import Backend, Region
from holodesk.platform.select import open_backend
from holodesk.platform.x11.connection import open_display
from tests.platform.vnc.servers import VncServer, require, solid_colour, xvnc
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.vnc


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _box(probe: ProbeApp, name: str) -> Region:
    widget = probe.widgets[name]
    return Region(widget.x, widget.y, widget.width, widget.height)


@pytest.fixture
def x_root(xvnc_server: VncServer) -> Iterator[Any]:
    """An X connection to the Xvnc, to paint its root window directly."""
    connection = open_display(xvnc_server.display)
    yield connection
    connection.close()


def test_one_display_the_size_of_the_framebuffer(vnc: Backend, xvnc_server: VncServer) -> None:
    (display,) = vnc.screen.displays()
    assert display.display_id == f"vnc:127.0.0.1:{xvnc_server.port}"
    assert display.bounds == Region(0, 0, 1280, 800)
    assert display.scale_factor == 1.0
    assert display.primary
    assert vnc.os == "vnc"


def test_widgets_have_their_colours(vnc: Backend, probe: ProbeApp) -> None:
    screen = vnc.screen.grab(vnc.screen.virtual_desktop())
    assert screen.size == (1280, 800)
    assert screen.mode == "RGB"
    for name in ("swatch", "canvas"):
        assert screen.getpixel(probe.widgets[name].center) == _rgb(probe.colors[name])
    # A grab of exactly the swatch is that colour and nothing else.
    swatch = vnc.screen.grab(_box(probe, "swatch"))
    assert swatch.size == (60, 40)
    assert solid_colour(swatch) == _rgb(probe.colors["swatch"])


def test_the_pointer_is_not_painted_into_captures(vnc: Backend, probe: ProbeApp) -> None:
    # The Cursor pseudo-encoding: the server sends the pointer's shape apart.
    vnc.input.move(*probe.widgets["swatch"].center)
    probe.wait_for_event("motion", widget="swatch")
    swatch = vnc.screen.grab(_box(probe, "swatch"))
    assert solid_colour(swatch) == _rgb(probe.colors["swatch"])


def test_every_capture_is_fresh(vnc: Backend, x_root: Any) -> None:
    # Paint the root window and capture at once: no waiting, no polling.
    root = x_root.screen().root
    region = Region(1100, 700, 50, 40)
    for pixel, rgb in ((0xFF0000, (255, 0, 0)), (0x00FF00, (0, 255, 0)), (0x0000FF, (0, 0, 255))):
        root.change_attributes(background_pixel=pixel)
        root.clear_area(region.x, region.y, region.width, region.height)
        x_root.sync()  # the X server has painted once this returns
        assert solid_colour(vnc.screen.grab(region)) == rgb


def test_raw_and_zrle_decode_to_the_same_pixels(xvnc_server: VncServer, probe: ProbeApp) -> None:
    captures: list[Image.Image] = []
    for encodings in (("raw",), ("zrle",), ("copyrect", "raw")):
        backend = open_backend("vnc", **xvnc_server.options(), encodings=encodings)
        try:
            captures.append(backend.screen.grab(backend.screen.virtual_desktop()))
        finally:
            backend.close()
    window = _box(probe, "window")
    crop = (window.x, window.y, window.right, window.bottom)
    # Text, flat colours and edges: ZRLE uses palette, RLE and raw tiles for them.
    assert len(captures[0].crop(crop).getcolors(maxcolors=100000) or []) > 10
    assert captures[1].tobytes() == captures[0].tobytes()
    assert captures[2].tobytes() == captures[0].tobytes()


def test_a_region_outside_is_refused(vnc: Backend) -> None:
    with pytest.raises(ValueError, match="inside"):
        vnc.screen.grab(Region(1200, 700, 100, 100))
    with pytest.raises(ValueError, match="inside"):
        vnc.screen.grab(Region(0, 0, 0, 10))


def test_a_resized_desktop_is_followed() -> None:
    xrandr = require("xrandr", "x11-xserver-utils")
    with xvnc(1280, 800) as server:
        backend = open_backend("vnc", **server.options())
        try:
            assert backend.screen.virtual_desktop() == Region(0, 0, 1280, 800)
            for width, height in ((1024, 768), (1920, 1080)):
                subprocess.run(
                    [xrandr, "--display", server.display, "-s", f"{width}x{height}"], check=True
                )
                (display,) = backend.screen.displays()
                assert display.bounds == Region(0, 0, width, height)
                assert backend.screen.grab(display.bounds).size == (width, height)
                backend.input.move(width - 1, height - 1)  # the new corner is reachable
        finally:
            backend.close()
