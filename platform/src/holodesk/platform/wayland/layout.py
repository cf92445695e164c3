"""The monitor layout of a Wayland desktop, from portal ScreenCast streams.

The portal speaks in compositor (logical) coordinates: each monitor stream has a
`position` and `size` there, and NotifyPointerMotionAbsolute takes a point in one
stream's logical space. The platform interface speaks physical pixels, which is
what the Screenshot portal returns. The two differ by the desktop's scale, found
as the ratio of the screenshot's size to the logical layout's. One scale for the
whole desktop is assumed: the portal reports no per-monitor scale, and a
screenshot of monitors with mixed scales has only one pixel density anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from holodesk.platform.base import DisplayInfo, Region
from holodesk.platform.errors import CaptureError

log = logging.getLogger(__name__)

SOURCE_MONITOR = 1
SOURCE_WINDOW = 2
SOURCE_VIRTUAL = 4


@dataclass(frozen=True)
class Monitor:
    """One ScreenCast stream of a monitor, in logical (compositor) coordinates."""

    node_id: int
    x: int
    y: int
    width: int
    height: int
    stream_id: str = ""

    @property
    def logical(self) -> Region:
        return Region(self.x, self.y, self.width, self.height)


def monitors_from_streams(streams: Sequence[tuple[int, Mapping[str, Any]]]) -> list[Monitor]:
    """Monitors from the `streams` a(ua{sv}) of a Start response (variants unwrapped).

    A stream without a position (allowed when there is only one) sits at the
    origin; several without positions are laid out left to right, with a warning,
    as their real arrangement is unknown.
    """
    monitors: list[Monitor] = []
    next_x = 0
    for node_id, properties in streams:
        size = properties.get("size")
        if size is None:
            raise CaptureError(
                f"the portal's stream {node_id} has no size, so its geometry is unknown"
            )
        width, height = (int(v) for v in size)
        position = properties.get("position")
        if position is None:
            if len(streams) > 1:
                log.warning("stream %s has no position: placing it at x=%d", node_id, next_x)
            x, y = next_x, 0
        else:
            x, y = (int(v) for v in position)
        next_x = max(next_x, x + width)
        monitors.append(
            Monitor(int(node_id), x, y, width, height, str(properties.get("id", "") or ""))
        )
    return monitors


def bounding_box(regions: Sequence[Region]) -> Region:
    left = min(r.x for r in regions)
    top = min(r.y for r in regions)
    right = max(r.right for r in regions)
    bottom = max(r.bottom for r in regions)
    return Region(left, top, right - left, bottom - top)


def measure_scale(monitors: Sequence[Monitor], image_size: tuple[int, int]) -> float:
    """The physical pixels per logical pixel, from a screenshot of the whole desktop."""
    logical = bounding_box([m.logical for m in monitors])
    if logical.width == 0 or logical.height == 0:
        raise CaptureError(f"the portal reported an empty monitor layout: {logical}")
    scale_x = image_size[0] / logical.width
    scale_y = image_size[1] / logical.height
    if abs(scale_x - scale_y) > 0.01 * max(scale_x, scale_y):
        log.warning(
            "screenshot %sx%s does not scale the layout %sx%s evenly (%.3f vs %.3f); using %.3f",
            *image_size,
            logical.width,
            logical.height,
            scale_x,
            scale_y,
            scale_x,
        )
    return scale_x


@dataclass(frozen=True)
class DesktopLayout:
    """Monitors plus the scale between their logical and physical pixels."""

    monitors: tuple[Monitor, ...]
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.monitors:
            raise ValueError("a desktop layout needs at least one monitor")
        if self.scale <= 0:
            raise ValueError(f"scale must be positive, not {self.scale}")

    def physical(self, monitor: Monitor) -> Region:
        """A monitor's bounds in physical pixels of the virtual desktop."""
        left = round(monitor.x * self.scale)
        top = round(monitor.y * self.scale)
        right = round((monitor.x + monitor.width) * self.scale)
        bottom = round((monitor.y + monitor.height) * self.scale)
        return Region(left, top, right - left, bottom - top)

    def displays(self) -> list[DisplayInfo]:
        """Every monitor, primary (the one at the logical origin, else the first) first."""
        primary = next((m for m in self.monitors if (m.x, m.y) == (0, 0)), self.monitors[0])
        ordered = [primary, *(m for m in self.monitors if m is not primary)]
        return [
            DisplayInfo(
                display_id=f"wayland:{m.stream_id or m.node_id}",
                bounds=self.physical(m),
                scale_factor=self.scale,
                primary=m is primary,
                name=f"monitor {self.monitors.index(m)}",
            )
            for m in ordered
        ]

    def desktop(self) -> Region:
        """The physical bounding box of every monitor."""
        return bounding_box([self.physical(m) for m in self.monitors])

    def locate(self, x: int, y: int) -> tuple[Monitor, float, float]:
        """The monitor holding physical pixel (x, y), and the point in its logical space
        that the compositor maps into that pixel.

        At scale 1 that is the pixel's own corner; at any other, its centre: a pixel's
        edge at 1.5 is a third of a logical pixel, which no wire format holds exactly,
        and rounded down it lands in the pixel before.
        """
        aim = 0.0 if self.scale == 1.0 else 0.5
        for monitor in self.monitors:
            bounds = self.physical(monitor)
            if bounds.contains(x, y):
                return (
                    monitor,
                    (x + aim) / self.scale - monitor.x,
                    (y + aim) / self.scale - monitor.y,
                )
        raise ValueError(
            f"point ({x}, {y}) is on no monitor: "
            + ", ".join(str(self.physical(m)) for m in self.monitors)
        )
