"""The X11 screen source against real Xvfb servers."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from Xlib import Xatom

from holodesk.platform.base import Backend, Region
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.virtual_display import VirtualDisplay
from holodesk.platform.x11 import backend as x11_backend
from holodesk.platform.x11.connection import open_display
from tests.support.probe import ProbeApp
from tests.support.randr import Monitor, set_monitors
from tests.support.xvfb import xvfb as start_xvfb

pytestmark = pytest.mark.x11

T = TypeVar("T")
GUARD_S = 10.0


def eventually(read: Callable[[], T], expected: T) -> T:
    """`read()` once it equals `expected`, or its last value after the guard. The
    server's notice of a change reaches the screen's connection asynchronously."""
    deadline = time.monotonic() + GUARD_S
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.01)
        value = read()
    return value


def xrandr(display: str, *args: str) -> None:
    # Xvfb's RandR applies a screen size and then refuses the CRTC change that
    # follows it (exit 1): the size is what these tests need.
    subprocess.run(
        ["xrandr", *args], env={**os.environ, "DISPLAY": display}, capture_output=True, check=False
    )


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def test_single_screen_geometry(x11: Backend) -> None:
    [display] = x11.screen.displays()
    assert display.bounds == Region(0, 0, 1280, 800)
    assert display.primary
    assert display.scale_factor == 1.0
    assert display.display_id
    assert x11.screen.virtual_desktop() == Region(0, 0, 1280, 800)


def test_grab_sees_the_probe_window_colours(x11: Backend, probe: ProbeApp) -> None:
    swatch = probe.widgets["swatch"]
    image = x11.screen.grab(Region(swatch.x + 5, swatch.y + 5, swatch.width - 10, 20))
    assert image.mode == "RGB"
    assert image.size == (swatch.width - 10, 20)
    pixels = {image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)}
    assert pixels == {_rgb(probe.colors["swatch"])}
    canvas = probe.widgets["canvas"]
    x, y = canvas.center
    assert x11.screen.grab(Region(x, y, 1, 1)).getpixel((0, 0)) == _rgb(probe.colors["canvas"])


def test_grab_keeps_pixel_positions(x11: Backend, probe: ProbeApp) -> None:
    # A region straddling the swatch's left edge: window colour, then swatch colour.
    swatch = probe.widgets["swatch"]
    image = x11.screen.grab(Region(swatch.x - 4, swatch.y + 10, 8, 1))
    row = [image.getpixel((i, 0)) for i in range(8)]
    assert row[:4] == [_rgb(probe.colors["window"])] * 4
    assert row[4:] == [_rgb(probe.colors["swatch"])] * 4


def test_whole_screen_grab(x11: Backend) -> None:
    image = x11.screen.grab(x11.screen.virtual_desktop())
    assert image.size == (1280, 800)


@pytest.mark.parametrize("region", [Region(1200, 0, 100, 10), Region(0, 0, 0, 10)])
def test_grab_outside_the_screen_is_refused(x11: Backend, region: Region) -> None:
    with pytest.raises(ValueError, match="inside"):
        x11.screen.grab(region)


@pytest.fixture
def own_display() -> Iterator[str]:
    """A private Xvfb, for tests that change server-wide state."""
    with start_xvfb(640, 480) as display:
        yield display


def test_scale_factor_comes_from_xft_dpi(own_display: str) -> None:
    connection = open_display(own_display)
    root = connection.screen().root
    root.change_property(
        Xatom.RESOURCE_MANAGER, Xatom.STRING, 8, b"Xft.antialias:\t1\nXft.dpi:\t192\n"
    )
    connection.sync()
    backend = x11_backend.create(display=own_display)
    try:
        assert [d.scale_factor for d in backend.screen.displays()] == [2.0]
    finally:
        backend.close()
        connection.close()


def test_randr_monitors_become_displays_primary_first() -> None:
    with start_xvfb(1920, 600) as display:
        set_monitors(
            display,
            [
                Monitor("LEFT-1", 0, 0, 1280, 600),
                Monitor("RIGHT-1", 1280, 0, 640, 480, primary=True),
            ],
        )
        backend = x11_backend.create(display=display)
        try:
            displays = backend.screen.displays()
            desktop = backend.screen.virtual_desktop()
        finally:
            backend.close()
    assert [(d.display_id, d.bounds, d.primary) for d in displays] == [
        ("RIGHT-1", Region(1280, 0, 640, 480), True),
        ("LEFT-1", Region(0, 0, 1280, 600), False),
    ]
    assert desktop == Region(0, 0, 1920, 600)


def test_xinerama_screens_become_displays_without_randr() -> None:
    # Xvfb's Xinerama stacks its screens at the origin; what matters here is
    # that each Xinerama screen is reported, as the server describes it.
    extra = ["-extension", "RANDR", "+xinerama", "-screen", "1", "640x480x24"]
    with start_xvfb(800, 600, extra_args=extra) as display:
        backend = x11_backend.create(display=display)
        try:
            displays = backend.screen.displays()
        finally:
            backend.close()
    assert [d.bounds for d in displays] == [Region(0, 0, 800, 600), Region(0, 0, 640, 480)]
    assert [d.display_id for d in displays] == ["xinerama-0", "xinerama-1"]
    assert [d.primary for d in displays] == [True, False]


def test_displays_follow_layout_changes_on_an_open_connection() -> None:
    with start_xvfb(1920, 600) as display:
        backend = x11_backend.create(display=display)
        try:

            def layout() -> list[tuple[str, Region, float]]:
                return [(d.display_id, d.bounds, d.scale_factor) for d in backend.screen.displays()]

            assert layout() == [("screen", Region(0, 0, 1920, 600), 1.0)]
            set_monitors(
                display,
                [
                    Monitor("LEFT-1", 0, 0, 1280, 600, primary=True),
                    Monitor("RIGHT-1", 1280, 0, 640, 600),
                ],
            )
            split = [
                ("LEFT-1", Region(0, 0, 1280, 600), 1.0),
                ("RIGHT-1", Region(1280, 0, 640, 600), 1.0),
            ]
            assert eventually(layout, split) == split
            connection = open_display(display)
            connection.screen().root.change_property(
                Xatom.RESOURCE_MANAGER, Xatom.STRING, 8, b"Xft.dpi:\t144\n"
            )
            connection.sync()
            connection.close()
            scaled = [(name, bounds, 1.5) for name, bounds, _ in split]
            assert eventually(layout, scaled) == scaled
        finally:
            backend.close()


def test_an_unchanged_layout_is_answered_without_asking_the_server(x11: Backend) -> None:
    first = x11.screen.displays()
    # White box: the screen's own connection, to count its requests.
    requests = x11.screen._display.display  # type: ignore[attr-defined]
    serial = requests.request_serial
    for _ in range(5):
        assert x11.screen.displays() == first
        assert x11.screen.virtual_desktop() == Region(0, 0, 1280, 800)
    assert requests.request_serial == serial


def test_grabs_follow_the_screen_size() -> None:
    with start_xvfb(1280, 800) as display:
        backend = x11_backend.create(display=display)
        try:
            xrandr(display, "--fb", "1024x768")

            def desktop() -> Region:
                return backend.screen.virtual_desktop()

            assert eventually(desktop, Region(0, 0, 1024, 768)) == Region(0, 0, 1024, 768)
            assert backend.screen.grab(desktop()).size == (1024, 768)
            # Larger than the screen mss first saw: its shared memory must be remade.
            xrandr(display, "--fb", "1280x800")
            assert eventually(desktop, Region(0, 0, 1280, 800)) == Region(0, 0, 1280, 800)
            assert backend.screen.grab(desktop()).size == (1280, 800)
            with pytest.raises(ValueError, match="inside"):
                backend.screen.grab(Region(0, 0, 1281, 800))
        finally:
            backend.close()


def test_xvfb_failure_reports_its_output() -> None:
    with pytest.raises(BackendUnavailableError, match="Xvfb exited") as raised:
        VirtualDisplay(extra_args=["-no-such-option"]).start()
    assert "no-such-option" in str(raised.value)
