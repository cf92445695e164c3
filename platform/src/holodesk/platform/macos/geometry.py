"""Physical virtual-desktop pixels <-> Quartz global points, display by display.

Quartz places displays in one global space of points; each display has its own
scale (pixels per point: 2 on Retina, 1 on most external monitors). The contract's
virtual desktop is in physical pixels, so every display needs a pixel rectangle, and
with mixed scales there is no single factor that maps one space onto the other.

Layout rule, per axis, with U = the largest scale of any display rounded up to an
integer (the "unit") and c = the display's point nearest the global origin (its
start, its end, or 0 when it straddles 0):

    pixel origin = floor(U * c - (c - origin_pt) * scale)
    pixel size   = the display's backing pixels (size_pt * scale)

i.e. the display's anchor point c sits at pixel U * c, and the display extends from
there at its own scale. Consequences:
- with one scale everywhere (the usual case), pixels are exactly points * scale;
- the main display (at point 0,0) starts at pixel (0, 0); a display touching it on
  its left or top still touches it in pixels, and so does one on its right or bottom
  when the main display has the largest scale (a MacBook with external monitors);
- each display's pixels lie inside U times its point rectangle, and point rectangles
  never overlap, so pixel rectangles never overlap either (checked anyway). Mixed
  scales can leave gaps between displays; a capture of the whole desktop shows them
  black, and no action can target them.

Within a display the mapping is affine and exact: pixel i of an axis is the point
interval [origin_pt + i / scale, origin_pt + (i+1) / scale), events go to its
centre, and a point maps back with floor. It is separable (x and y independent).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from holodesk.platform.base import DisplayInfo, Region
from holodesk.platform.errors import PlatformError
from holodesk.platform.macos.api import PointRect, QuartzDisplay


@dataclass(frozen=True)
class DisplayMap:
    """One display: its points, its pixels in the virtual desktop, and the maps between."""

    display: QuartzDisplay
    pixels: Region

    @property
    def points(self) -> PointRect:
        return self.display.bounds

    @property
    def scale_x(self) -> float:
        return self.pixels.width / self.points.width

    @property
    def scale_y(self) -> float:
        return self.pixels.height / self.points.height

    def point_x(self, x: int) -> float:
        """The point at the centre of pixel column x."""
        bounds = self.points
        return bounds.x + (x - self.pixels.x + 0.5) * bounds.width / self.pixels.width

    def point_y(self, y: int) -> float:
        bounds = self.points
        return bounds.y + (y - self.pixels.y + 0.5) * bounds.height / self.pixels.height

    def point_for_pixel(self, x: int, y: int) -> tuple[float, float]:
        if not self.pixels.contains(x, y):
            raise ValueError(f"pixel ({x}, {y}) is not on display {self.display.display_id}")
        return self.point_x(x), self.point_y(y)

    def pixel_x(self, x: float) -> int:
        """The pixel column holding point x (clamped to the display)."""
        bounds = self.points
        column = math.floor((x - bounds.x) * self.pixels.width / bounds.width)
        return self.pixels.x + min(max(column, 0), self.pixels.width - 1)

    def pixel_y(self, y: float) -> int:
        bounds = self.points
        row = math.floor((y - bounds.y) * self.pixels.height / bounds.height)
        return self.pixels.y + min(max(row, 0), self.pixels.height - 1)

    def pixel_for_point(self, x: float, y: float) -> tuple[int, int]:
        return self.pixel_x(x), self.pixel_y(y)

    def info(self) -> DisplayInfo:
        display = self.display
        return DisplayInfo(
            display_id=str(display.display_id),
            bounds=self.pixels,
            scale_factor=self.scale_x,
            primary=display.main,
            name=display.name or f"display {display.display_id}",
        )


class DesktopMap:
    """Every display's map; finds the display under a pixel or a point."""

    def __init__(self, displays: Sequence[QuartzDisplay]) -> None:
        if not displays:
            raise PlatformError("macOS reports no active display")
        self.displays = layout(displays)

    def at_pixel(self, x: int, y: int) -> DisplayMap:
        for display in self.displays:
            if display.pixels.contains(x, y):
                return display
        listing = ", ".join(f"{d.display.display_id} {d.pixels}" for d in self.displays)
        raise ValueError(f"point ({x}, {y}) is on no display: {listing}")

    def at_point(self, x: float, y: float) -> DisplayMap:
        """The display holding a global point, else the nearest one."""
        for display in self.displays:
            if display.points.contains(x, y):
                return display
        return min(self.displays, key=lambda d: _distance(d.points, x, y))

    def point_for_pixel(self, x: int, y: int) -> tuple[float, float]:
        return self.at_pixel(x, y).point_for_pixel(x, y)

    def pixel_for_point(self, x: float, y: float) -> tuple[int, int]:
        return self.at_point(x, y).pixel_for_point(x, y)


def layout(displays: Sequence[QuartzDisplay]) -> list[DisplayMap]:
    """Pixel rectangles for the displays (see the module docstring), main display first."""
    unit = math.ceil(max(max(_scales(d)) for d in displays))
    maps = []
    for display in displays:
        bounds = display.bounds
        if bounds.width <= 0 or bounds.height <= 0 or display.pixel_width <= 0:
            raise PlatformError(f"display {display.display_id} reports an empty size: {display}")
        x = _axis_origin(bounds.x, bounds.width, display.pixel_width, unit)
        y = _axis_origin(bounds.y, bounds.height, display.pixel_height, unit)
        maps.append(DisplayMap(display, Region(x, y, display.pixel_width, display.pixel_height)))
    _check_disjoint(maps)
    return sorted(maps, key=lambda m: not m.display.main)


def _scales(display: QuartzDisplay) -> tuple[float, float]:
    bounds = display.bounds
    return display.pixel_width / bounds.width, display.pixel_height / bounds.height


def _axis_origin(origin: float, size: float, pixels: int, unit: int) -> int:
    start, length = Fraction(origin), Fraction(size)
    anchor = min(max(Fraction(0), start), start + length)
    scale = pixels / length
    return math.floor(anchor * unit - (anchor - start) * scale)


def _check_disjoint(maps: Sequence[DisplayMap]) -> None:
    for index, first in enumerate(maps):
        for second in maps[index + 1 :]:
            a, b = first.pixels, second.pixels
            if a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom:
                raise PlatformError(
                    f"displays {first.display.display_id} and {second.display.display_id} "
                    f"overlap in pixels ({a} and {b}): their point bounds overlap (an "
                    "unlisted mirror?) or are not whole numbers, which this layout cannot "
                    "place apart"
                )


def _distance(rect: PointRect, x: float, y: float) -> float:
    dx = max(rect.x - x, 0.0, x - rect.right)
    dy = max(rect.y - y, 0.0, y - rect.bottom)
    return math.hypot(dx, dy)
