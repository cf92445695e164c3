"""What a predicted point must fall in: a box, a polygon, or nothing at all (a refusal).

Every target is in the pixels of the sample's own image (the image as the data set
ships it, before any resize a policy applies), and every benchmark's convention
(x,y,w,h or x1..y2, normalised or pixels, edges in or out) has already been turned
into one of these by its reader: nothing downstream converts a box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Edges = Literal["inclusive", "strict"]
Point = tuple[float, float]


@dataclass(frozen=True)
class Box:
    """An axis-aligned box; `edges` says whether a point on its border is inside.

    ScreenSpot, OSWorld-G, WebClick and Showdown count the border as inside; GroundUI's
    harness (agent-studio) compares with strict inequalities, so a point on its border
    misses.
    """

    x1: float
    y1: float
    x2: float
    y2: float
    edges: Edges = "inclusive"

    def __post_init__(self) -> None:
        values = (self.x1, self.y1, self.x2, self.y2)
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"box coordinates must be finite numbers, got {values}")
        if self.x2 < self.x1 or self.y2 < self.y1:
            raise ValueError(f"inverted box: x1,y1,x2,y2 = {values}")
        if self.edges not in ("inclusive", "strict"):
            raise ValueError(f"edges must be 'inclusive' or 'strict', got {self.edges!r}")

    def contains(self, x: float, y: float) -> bool:
        if self.edges == "strict":
            return self.x1 < x < self.x2 and self.y1 < y < self.y2
        return self.x1 <= x <= self.x2 and self.y1 <= y <= self.y2

    def bounds(self) -> tuple[float, float, float, float]:
        """x1, y1, x2, y2 of the smallest box holding the target."""
        return (self.x1, self.y1, self.x2, self.y2)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": "box",
            "x1": self.x1,
            "y1": self.y1,
            "x2": self.x2,
            "y2": self.y2,
            "edges": self.edges,
        }


@dataclass(frozen=True)
class Polygon:
    """A simple polygon (concave allowed), its vertices in order.

    Inside is decided by ray casting (even-odd), as OSWorld-G's own evaluation does; a
    point exactly on an edge or a vertex counts as inside, so the verdict never
    depends on floating-point luck at the border.
    """

    points: tuple[Point, ...]

    def __post_init__(self) -> None:
        if len(self.points) < 3:
            raise ValueError(f"a polygon needs at least 3 vertices, got {len(self.points)}")
        for point in self.points:
            if len(point) != 2 or not all(math.isfinite(v) for v in point):
                raise ValueError(f"polygon vertex must be two finite numbers, got {point!r}")

    def contains(self, x: float, y: float) -> bool:
        points = self.points
        inside = False
        for i, (ax, ay) in enumerate(points):
            bx, by = points[(i + 1) % len(points)]
            if _on_segment(x, y, ax, ay, bx, by):
                return True
            # Ray casting: count edges crossed by a ray from (x, y) towards +x.
            if (ay > y) != (by > y):
                crossing = ax + (y - ay) * (bx - ax) / (by - ay)
                if x < crossing:
                    inside = not inside
        return inside

    def bounds(self) -> tuple[float, float, float, float]:
        xs = [p[0] for p in self.points]
        ys = [p[1] for p in self.points]
        return (min(xs), min(ys), max(xs), max(ys))

    def to_json(self) -> dict[str, object]:
        return {"kind": "polygon", "points": [list(p) for p in self.points]}


@dataclass(frozen=True)
class Refusal:
    """The target is not in the image: no point hits; only saying "absent" does."""

    def contains(self, x: float, y: float) -> bool:
        return False

    def bounds(self) -> None:
        return None

    def to_json(self) -> dict[str, object]:
        return {"kind": "refusal"}


Target = Box | Polygon | Refusal

# Relative distance from an edge under which a point counts as on it (float rounding).
_ON_EDGE = 1e-12


def _on_segment(x: float, y: float, ax: float, ay: float, bx: float, by: float) -> bool:
    """Whether (x, y) lies on the segment a-b (within float rounding of the line)."""
    length = math.hypot(bx - ax, by - ay)
    cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax)
    # |cross| / length is the point's distance from the line through a and b.
    if abs(cross) > _ON_EDGE * max(length, 1.0) * max(length, 1.0):
        return False
    return min(ax, bx) <= x <= max(ax, bx) and min(ay, by) <= y <= max(ay, by)
