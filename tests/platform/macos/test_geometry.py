"""Physical pixels <-> Quartz points: the layout rule, and exact round trips.

Pure logic (no macOS needed). The per-display map is separable (a pixel's x point
depends on its column only, its y point on its row only), so checking every column
and every row of a display checks every one of its pixels; one display is also
checked pixel by pixel in 2-D to show the separability holds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from holodesk.platform.base import Region
from holodesk.platform.errors import PlatformError
from holodesk.platform.macos.api import PointRect, QuartzDisplay
from holodesk.platform.macos.geometry import DesktopMap, DisplayMap, layout
from tests.platform.macos.conftest import ABOVE, DISPLAYS, LEFT, RETINA

# Main at scale 1 with Retinas left and right: the rightmost one leaves a gap.
PLAIN_MAIN = QuartzDisplay(5, PointRect(0, 0, 1920, 1080), 1920, 1080, main=True)
RETINA_LEFT = QuartzDisplay(6, PointRect(-1512, 0, 1512, 982), 3024, 1964, main=False)
RETINA_RIGHT = QuartzDisplay(7, PointRect(1920, 200, 1512, 982), 3024, 1964, main=False)
BELOW = QuartzDisplay(8, PointRect(300, 1080, 1280, 800), 1280, 800, main=False)
SETUPS = {
    "retina-main": DISPLAYS,
    "plain-main": (PLAIN_MAIN, RETINA_LEFT, RETINA_RIGHT, BELOW),
    "one-retina": (RETINA,),
}


def test_layout_of_the_mixed_setup_by_hand() -> None:
    pixels = {m.display.display_id: m.pixels for m in layout(DISPLAYS)}
    assert pixels == {
        RETINA.display_id: Region(0, 0, 3024, 1964),  # main: pixel origin 0, scale 2
        LEFT.display_id: Region(-1920, 200, 1920, 1080),  # right edge anchored at x = 0
        ABOVE.display_id: Region(-800, -2880, 5120, 2880),  # straddles x = 0: x = -400 * 2
    }


def test_same_scale_everywhere_is_just_points_times_scale() -> None:
    a = QuartzDisplay(1, PointRect(0, 0, 1512, 982), 3024, 1964, main=True)
    b = QuartzDisplay(2, PointRect(-1728, -200, 1728, 1117), 3456, 2234, main=False)
    pixels = [m.pixels for m in layout((a, b))]
    assert pixels == [Region(0, 0, 3024, 1964), Region(-3456, -400, 3456, 2234)]


def test_displays_touching_the_main_one_still_touch_in_pixels() -> None:
    # Main at the largest scale (a MacBook with external monitors): every side touches.
    right = QuartzDisplay(2, PointRect(1512, 0, 1920, 1080), 1920, 1080, main=False)
    below = QuartzDisplay(3, PointRect(0, 982, 1920, 1080), 1920, 1080, main=False)
    main, *others = layout((RETINA, LEFT, ABOVE, right, below))
    pixels = {m.display.display_id: m.pixels for m in others}
    assert pixels[LEFT.display_id].right == main.pixels.x
    assert pixels[ABOVE.display_id].bottom == main.pixels.y
    assert pixels[2].x == main.pixels.right
    assert pixels[3].y == main.pixels.bottom


def test_a_main_display_below_the_largest_scale_touches_on_its_left_and_top() -> None:
    maps = {m.display.display_id: m.pixels for m in layout(SETUPS["plain-main"])}
    main, left, right, below = (maps[d.display_id] for d in SETUPS["plain-main"])
    assert left.right == main.x  # a Retina left of a scale-1 main: no gap
    # Right and below sit at twice their point offset: the documented gaps.
    assert (right.x, right.y) == (2 * 1920, 2 * 200)
    assert (below.x, below.y) == (2 * 300, 2 * 1080)


@pytest.mark.parametrize("setup", SETUPS)
def test_pixel_rectangles_never_overlap(setup: str) -> None:
    maps = layout(SETUPS[setup])
    for index, a in enumerate(maps):
        for b in maps[index + 1 :]:
            p, q = a.pixels, b.pixels
            assert p.right <= q.x or q.right <= p.x or p.bottom <= q.y or q.bottom <= p.y


@pytest.mark.parametrize("setup", SETUPS)
def test_every_column_and_row_of_every_display_round_trips(setup: str) -> None:
    for display in layout(SETUPS[setup]):
        points, pixels = display.points, display.pixels
        for x in range(pixels.x, pixels.right):
            point = display.point_x(x)
            # The point lies inside the pixel's own column of points...
            column = x - pixels.x
            assert points.x + Fraction(column) * Fraction(points.width) / pixels.width <= point
            assert point < points.x + Fraction(column + 1) * Fraction(points.width) / pixels.width
            # ...and maps back to it.
            assert display.pixel_x(point) == x
        for y in range(pixels.y, pixels.bottom):
            point = display.point_y(y)
            assert points.y <= point < points.bottom
            assert display.pixel_y(point) == y


def test_every_pixel_of_a_display_round_trips_in_two_dimensions() -> None:
    small = QuartzDisplay(9, PointRect(-150, -75, 150, 75), 300, 150, main=False)
    desktop = DesktopMap((RETINA, small))
    [mapped] = [d for d in desktop.displays if d.display.display_id == 9]
    for x in range(mapped.pixels.x, mapped.pixels.right):
        for y in range(mapped.pixels.y, mapped.pixels.bottom):
            point = desktop.point_for_pixel(x, y)
            assert desktop.at_point(*point) is mapped
            assert desktop.pixel_for_point(*point) == (x, y)


@pytest.mark.parametrize("setup", SETUPS)
def test_each_display_owns_the_points_of_its_pixels(setup: str) -> None:
    desktop = DesktopMap(SETUPS[setup])
    for display in desktop.displays:
        p = display.pixels
        for x, y in [(p.x, p.y), (p.right - 1, p.bottom - 1), (p.x + p.width // 2, p.y + 1)]:
            assert desktop.at_point(*desktop.point_for_pixel(x, y)) is display


def test_retina_pixels_are_half_points_centred() -> None:
    [main] = layout((RETINA,))
    assert main.point_for_pixel(0, 0) == (0.25, 0.25)
    assert main.point_for_pixel(1, 3) == (0.75, 1.75)
    assert main.pixel_for_point(0.5, 0.49) == (1, 0)


def test_a_pixel_in_a_gap_or_off_the_desktop_is_refused() -> None:
    desktop = DesktopMap(SETUPS["plain-main"])
    with pytest.raises(ValueError, match=r"\(3000, 300\) is on no display"):
        desktop.point_for_pixel(3000, 300)  # between the main display and the right Retina


def test_a_point_off_every_display_maps_to_the_nearest_edge() -> None:
    desktop = DesktopMap((RETINA,))
    assert desktop.pixel_for_point(-5.0, 2000.0) == (0, 1963)


def test_display_info_reports_ids_scale_and_primary() -> None:
    infos = [m.info() for m in layout(DISPLAYS)]
    assert [i.display_id for i in infos] == ["1", "69733382", "722475457"]  # main first
    assert [i.primary for i in infos] == [True, False, False]
    assert [i.scale_factor for i in infos] == [2.0, 1.0, 2.0]
    assert [i.name for i in infos] == ["Built-in", "HP", "LG 4K"]
    unnamed = QuartzDisplay(3, PointRect(0, 0, 10, 10), 10, 10, main=True)
    assert layout((unnamed,))[0].info().name == "display 3"


def test_a_non_integer_scale_still_lays_out_without_overlap() -> None:
    odd = QuartzDisplay(2, PointRect(1512, 0, 1000, 600), 1500, 900, main=False)
    maps = layout((RETINA, odd))
    right = next(m for m in maps if m.display.display_id == 2)
    assert right.pixels.x == 3024
    assert math.isclose(right.scale_x, 1.5)
    for x in range(right.pixels.x, right.pixels.right):
        assert right.pixel_x(right.point_x(x)) == x


def test_displays_that_would_overlap_are_reported() -> None:
    # macOS lists one display per mirror set; were a mirror listed, it would overlap.
    mirror = QuartzDisplay(2, RETINA.bounds, 1512, 982, main=False)
    with pytest.raises(PlatformError, match="overlap in pixels"):
        layout((RETINA, mirror))


def test_no_display_is_an_error() -> None:
    with pytest.raises(PlatformError, match="no active display"):
        DesktopMap(())


def test_maps_are_values() -> None:
    [main] = layout((RETINA,))
    assert main == DisplayMap(RETINA, Region(0, 0, 3024, 1964))
