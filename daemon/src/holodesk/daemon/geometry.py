"""Plain geometry values shared by frames and actions (no protobuf here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """A point; which space it lives in is said by whoever holds it."""

    x: float
    y: float


@dataclass(frozen=True)
class Size:
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True)
class Box:
    """An axis-aligned box with continuous edges (left <= right, top <= bottom);
    which space it lives in is said by whoever holds it."""

    left: float
    top: float
    right: float
    bottom: float

    @property
    def center(self) -> Point:
        return Point((self.left + self.right) / 2, (self.top + self.bottom) / 2)

    def contains(self, point: Point) -> bool:
        return self.left <= point.x <= self.right and self.top <= point.y <= self.bottom

    def clipped(self, size: Size) -> Box:
        """The part inside a width x height image."""
        w, h = float(size.width), float(size.height)
        return Box(
            min(max(self.left, 0.0), w),
            min(max(self.top, 0.0), h),
            min(max(self.right, 0.0), w),
            min(max(self.bottom, 0.0), h),
        )
