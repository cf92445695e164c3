"""QuartzScreen: displays in physical pixels, grabs exact to the pixel on mixed scales.

macOS cannot run here: FakeQuartzApi answers captures at each display's backing
resolution with pixels that encode their own position on their display, so every
pixel of a grab can be checked against where it should have come from.
"""

from __future__ import annotations

import pytest
from PIL import Image

from holodesk.platform.base import Backend, DisplayInfo, Region
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos.api import PointRect
from tests.platform.macos.conftest import DISPLAYS, TERMINAL
from tests.platform.macos.fake_api import FakeQuartzApi, pattern

INDEX = {str(d.display_id): i for i, d in enumerate(DISPLAYS)}


def expected_pixel(displays: list[DisplayInfo], x: int, y: int) -> tuple[int, int, int]:
    """What the desktop shows at physical pixel (x, y): its display's pattern, or black."""
    for display in displays:
        if display.bounds.contains(x, y):
            column, row = x - display.bounds.x, y - display.bounds.y
            return pattern(INDEX[display.display_id], column, row)
    return (0, 0, 0)


def assert_exact(backend: Backend, image: Image.Image, region: Region) -> None:
    displays = backend.screen.displays()
    assert image.size == (region.width, region.height)
    for j in range(region.height):
        for i in range(region.width):
            assert image.getpixel((i, j)) == expected_pixel(displays, region.x + i, region.y + j)


def test_displays_are_physical_pixels_main_first(backend: Backend) -> None:
    displays = backend.screen.displays()
    assert [(d.display_id, d.bounds, d.scale_factor, d.primary) for d in displays] == [
        ("1", Region(0, 0, 3024, 1964), 2.0, True),
        ("69733382", Region(-1920, 200, 1920, 1080), 1.0, False),
        ("722475457", Region(-800, -2880, 5120, 2880), 2.0, False),
    ]
    assert backend.screen.virtual_desktop() == Region(-1920, -2880, 6240, 4844)


@pytest.mark.parametrize(
    "region",
    [
        Region(0, 0, 3024, 1964),  # a whole Retina display
        Region(1, 3, 5, 7),  # odd offsets: half points on a scale-2 display
        Region(-1920, 200, 1920, 1080),  # a whole scale-1 display
    ],
)
def test_a_grab_inside_one_display_is_exact(
    backend: Backend, api: FakeQuartzApi, region: Region
) -> None:
    image = backend.screen.grab(region)
    [rect] = api.captures
    # Whole points covering the region, captured once.
    assert rect.x == int(rect.x)
    assert rect.width == int(rect.width)
    if region.width < 100:
        assert_exact(backend, image, region)
    else:  # sample: rows and columns through the whole image
        displays = backend.screen.displays()
        for i, j in [(0, 0), (region.width - 1, region.height - 1), (17, 1000), (1001, 3)]:
            assert image.getpixel((i, j)) == expected_pixel(displays, region.x + i, region.y + j)


def test_a_grab_across_mixed_scales_and_a_gap_is_exact(
    backend: Backend, api: FakeQuartzApi
) -> None:
    # Corners of all three displays meet near the origin; (-5, -3) .. is left-above.
    region = Region(-7, -5, 15, 210)
    image = backend.screen.grab(region)
    assert_exact(backend, image, region)
    assert len(api.captures) == 3
    # The left display starts at y = 200: rows above it, left of x = 0, are the gap.
    assert image.getpixel((0, 5)) == (0, 0, 0)


def test_each_part_is_captured_in_its_own_points(backend: Backend, api: FakeQuartzApi) -> None:
    backend.screen.grab(Region(-2, 199, 4, 2))
    assert sorted(api.captures, key=lambda r: r.x) == [
        PointRect(-2, 100, 2, 1),  # the scale-1 display: pixel row 200 is point row 100
        PointRect(0, 99, 1, 2),  # the Retina: pixel rows 199-200 straddle points 99 and 100
    ]


def test_a_nominal_resolution_capture_is_resized_to_physical_pixels() -> None:
    api = FakeQuartzApi(DISPLAYS, nominal_capture=True)
    backend = quartz.create(api=api, host=TERMINAL)
    image = backend.screen.grab(Region(0, 0, 64, 32))
    assert image.size == (64, 32)


@pytest.mark.parametrize("region", [Region(-1921, 0, 10, 10), Region(0, 0, 0, 5)])
def test_grabs_outside_the_desktop_or_empty_are_refused(backend: Backend, region: Region) -> None:
    with pytest.raises(ValueError, match="non-empty and inside"):
        backend.screen.grab(region)
