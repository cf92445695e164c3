"""Output geometry: where each output sits, in logical and in physical pixels.

A wlroots compositor lays outputs out in logical (compositor) coordinates
(xdg-output's logical position and size); each output shows that rectangle in its
mode's physical pixels, at a scale that may be fractional (1.25, 1.5: sway's
`output NAME scale 1.5` makes a 1920x1200 mode 1280x800 logical pixels). The
platform interface speaks physical pixels, so:

- each output's physical rectangle has its mode's size, and its origin is its
  logical position times the desktop's largest scale (floored). With one scale
  everywhere that is simply logical times scale. With mixed scales, multiplying
  each origin by its own output's scale would make a low-scale output overlap the
  next (1280 logical px at 1.5 are 1920 physical, but the neighbour at 1.25 would
  start at 1600): pixels there would belong to two outputs, and half of one could
  never be clicked. Scaled by the largest factor, each physical rectangle lies
  inside its logical rectangle scaled alike, so outputs that do not overlap
  logically never overlap physically (they may leave gaps, which are on no monitor);
- a point maps back to the logical centre of the physical pixel it names: a click
  at physical pixel (x, y) lands on a logical point inside exactly that pixel, never
  on its edge, where rounding could pick the neighbour.

The scale used is the measured ratio of mode width to logical width (wl_output's
integer `scale` event rounds 1.5 up to 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from holodesk.platform.base import DisplayInfo, Region

# Logical units per unit of virtual-pointer motion: motion_absolute takes integers,
# so positions go in 1/POINTER_SUBUNITS of a logical pixel.
POINTER_SUBUNITS = 1024


@dataclass(frozen=True)
class Output:
    """One output: its name, logical rectangle and physical (mode) size."""

    name: str
    logical: Region
    physical_width: int
    physical_height: int

    @property
    def scale(self) -> float:
        """Physical pixels per logical pixel (fractional where the compositor says so)."""
        if self.logical.width <= 0:
            return 1.0
        return self.physical_width / self.logical.width

    def physical(self, desktop_scale: float) -> Region:
        """Where this output's pixels sit in the physical virtual desktop, its
        origin scaled by `desktop_scale` (the layout's largest scale)."""
        return Region(
            math.floor(self.logical.x * desktop_scale),
            math.floor(self.logical.y * desktop_scale),
            self.physical_width,
            self.physical_height,
        )

    def display(self, desktop_scale: float, primary: bool) -> DisplayInfo:
        return DisplayInfo(
            display_id=self.name,
            bounds=self.physical(desktop_scale),
            scale_factor=self.scale,
            primary=primary,
            name=self.name,
        )


@dataclass(frozen=True)
class Layout:
    """Every output, the first one primary."""

    outputs: tuple[Output, ...]

    @property
    def desktop_scale(self) -> float:
        """The factor from logical positions to physical origins: the largest scale."""
        return max(output.scale for output in self.outputs)

    def displays(self) -> list[DisplayInfo]:
        scale = self.desktop_scale
        return [output.display(scale, index == 0) for index, output in enumerate(self.outputs)]

    def bounds(self, output: Output) -> Region:
        """An output's physical rectangle in this layout."""
        return output.physical(self.desktop_scale)

    def output_at(self, x: int, y: int) -> Output:
        """The output showing physical pixel (x, y); ValueError when none does."""
        for output in self.outputs:
            if self.bounds(output).contains(x, y):
                return output
        raise ValueError(f"({x}, {y}) is on no monitor: it lies outside every output's pixels")

    def to_logical(self, x: int, y: int) -> tuple[float, float]:
        """The logical point at the centre of physical pixel (x, y)."""
        output = self.output_at(x, y)
        physical = self.bounds(output)
        scale = output.scale
        return (
            output.logical.x + (x - physical.x + 0.5) / scale,
            output.logical.y + (y - physical.y + 0.5) / scale,
        )

    def logical_box(self) -> Region:
        """The bounding box of the outputs' logical rectangles: what an absolute
        virtual-pointer motion spans."""
        return _bounding([output.logical for output in self.outputs])

    def pointer_motion(self, x: int, y: int) -> tuple[int, int, int, int]:
        """motion_absolute's (x, y, x_extent, y_extent) for physical pixel (x, y)."""
        logical_x, logical_y = self.to_logical(x, y)
        box = self.logical_box()
        return (
            round((logical_x - box.x) * POINTER_SUBUNITS),
            round((logical_y - box.y) * POINTER_SUBUNITS),
            box.width * POINTER_SUBUNITS,
            box.height * POINTER_SUBUNITS,
        )


def _bounding(regions: Sequence[Region]) -> Region:
    left = min(r.x for r in regions)
    top = min(r.y for r in regions)
    right = max(r.right for r in regions)
    bottom = max(r.bottom for r in regions)
    return Region(left, top, right - left, bottom - top)
