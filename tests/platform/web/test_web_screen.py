"""Capture and hit-testing at device scale factors 1 and 2: pixels are physical pixels."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from holodesk.platform.base import Region
from holodesk.platform.web.backend import WebBackend
from tests.platform.web.support import events

pytestmark = pytest.mark.web

BACKGROUND = (10, 20, 30)
RED = (255, 0, 0)
BLUE = (0, 0, 255)


@pytest.mark.parametrize("scale", [1, 2])
def test_display_is_the_viewport_in_physical_pixels(
    open_page: Callable[..., WebBackend], scale: int
) -> None:
    web = open_page("pixels.html", width=640, height=400, device_scale_factor=scale)
    (display,) = web.screen.displays()
    assert display.bounds == Region(0, 0, 640 * scale, 400 * scale)
    assert display.scale_factor == scale
    assert display.primary
    assert display.display_id.startswith("web:")
    assert web.screen.virtual_desktop() == display.bounds


@pytest.mark.parametrize("scale", [1, 2])
def test_screenshot_pixels_sit_at_css_position_times_scale(
    open_page: Callable[..., WebBackend], scale: int
) -> None:
    web = open_page("pixels.html", width=640, height=400, device_scale_factor=scale)
    image = web.screen.grab(web.screen.displays()[0].bounds)
    assert image.size == (640 * scale, 400 * scale)
    assert image.mode == "RGB"
    # The 1 CSS px red dot at (100, 50) covers scale x scale physical pixels.
    for dx in range(scale):
        for dy in range(scale):
            assert image.getpixel((100 * scale + dx, 50 * scale + dy)) == RED
    assert image.getpixel((100 * scale - 1, 50 * scale)) == BACKGROUND
    assert image.getpixel((100 * scale + scale, 50 * scale)) == BACKGROUND
    # The 40x20 CSS px blue block at (200, 100), edges included.
    left, top = 200 * scale, 100 * scale
    right, bottom = left + 40 * scale - 1, top + 20 * scale - 1
    for point in ((left, top), (right, bottom), (left, bottom), (right, top)):
        assert image.getpixel(point) == BLUE
    assert image.getpixel((right + 1, bottom)) == BACKGROUND
    assert image.getpixel((left, top - 1)) == BACKGROUND


def test_grab_of_a_region_is_the_same_pixels_cropped(
    open_page: Callable[..., WebBackend],
) -> None:
    web = open_page("pixels.html", width=640, height=400, device_scale_factor=2)
    region = Region(390, 190, 100, 60)  # the blue block's top-left corner at (400, 200)
    image = web.screen.grab(region)
    assert image.size == (100, 60)
    assert image.getpixel((9, 9)) == BACKGROUND
    assert image.getpixel((10, 10)) == BLUE
    with pytest.raises(ValueError, match="inside"):
        web.screen.grab(Region(1200, 0, 100, 100))
    with pytest.raises(ValueError, match="non-empty"):
        web.screen.grab(Region(0, 0, 0, 10))


@pytest.mark.parametrize(
    ("physical", "hit"),
    [((200, 100), True), ((201, 101), True), ((199, 100), False), ((202, 101), False)],
)
def test_click_at_scale_2_lands_on_the_css_pixel_under_the_physical_one(
    open_page: Callable[..., WebBackend], physical: tuple[int, int], hit: bool
) -> None:
    # Physical pixels 200 and 201 both lie on CSS pixel 100, where the 1x1 dot is.
    web = open_page("pixels.html", width=640, height=400, device_scale_factor=2)
    web.input.click(*physical)
    (down,) = events(web, "mousedown")
    assert (down["target"] == "dot") is hit
    assert (down["x"], down["y"]) == (physical[0] // 2, physical[1] // 2)


def test_fractional_physical_sizes_are_refused(open_page: Callable[..., WebBackend]) -> None:
    with pytest.raises(ValueError, match="whole pixels"):
        open_page("pixels.html", width=641, height=400, device_scale_factor=1.5)
    web = open_page("pixels.html", width=640, height=400, device_scale_factor=1.5)
    assert web.screen.grab(web.screen.displays()[0].bounds).size == (960, 600)
