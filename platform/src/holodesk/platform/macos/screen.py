"""Displays and capture on macOS, in the physical pixels of `geometry`'s layout."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

from PIL import Image

from holodesk.platform.base import DisplayInfo, Region, ScreenSource, check_grab
from holodesk.platform.macos.api import PointRect, QuartzApi
from holodesk.platform.macos.geometry import DesktopMap, DisplayMap


class QuartzScreen(ScreenSource):
    """Displays from CoreGraphics; pixels captured display by display at full resolution."""

    def __init__(self, api: QuartzApi) -> None:
        self._api = api
        self._lock = threading.Lock()

    def _desktop(self) -> DesktopMap:
        return DesktopMap(self._api.displays())

    def displays(self) -> list[DisplayInfo]:
        with self._lock:
            return [display.info() for display in self._desktop().displays]

    def grab(self, region: Region) -> Image.Image:
        """Each display's part of the region captured at its own scale; gaps stay black."""
        with self._lock:
            maps = self._desktop().displays
            check_grab(region, _bounding_box([m.pixels for m in maps]))
            canvas = Image.new("RGB", (region.width, region.height))
            for display in maps:
                part = _intersection(region, display.pixels)
                if part is not None:
                    canvas.paste(
                        self._grab_part(display, part), (part.x - region.x, part.y - region.y)
                    )
            return canvas

    def _grab_part(self, display: DisplayMap, part: Region) -> Image.Image:
        """Capture the whole points covering `part`, then crop to its pixels exactly."""
        points, pixels = display.points, display.pixels
        x0, x1, crop_x, size_x = _axis(part.x - pixels.x, part.width, points.width, pixels.width)
        y0, y1, crop_y, size_y = _axis(part.y - pixels.y, part.height, points.height, pixels.height)
        image = self._api.capture(PointRect(points.x + x0, points.y + y0, x1 - x0, y1 - y0))
        if image.size != (size_x, size_y):
            # macOS returned another resolution (nominal, or a non-integral scale).
            image = image.resize((size_x, size_y), Image.Resampling.LANCZOS)
        return image.convert("RGB").crop(
            (crop_x, crop_y, crop_x + part.width, crop_y + part.height)
        )

    def close(self) -> None:
        with self._lock:
            self._api.close()


def _axis(start: int, length: int, points: float, pixels: int) -> tuple[int, int, int, int]:
    """For pixels [start, start+length) of a display axis: the whole points covering
    them (first, end), where the pixels begin in that capture, and its size in pixels."""
    per_point = Fraction(pixels) / Fraction(points)
    first = math.floor(start / per_point)
    end = math.ceil((start + length) / per_point)
    return first, end, round(start - first * per_point), round((end - first) * per_point)


def _intersection(a: Region, b: Region) -> Region | None:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.right, b.right), min(a.bottom, b.bottom)
    if left >= right or top >= bottom:
        return None
    return Region(left, top, right - left, bottom - top)


def _bounding_box(regions: list[Region]) -> Region:
    left = min(r.x for r in regions)
    top = min(r.y for r in regions)
    right = max(r.right for r in regions)
    bottom = max(r.bottom for r in regions)
    return Region(left, top, right - left, bottom - top)
