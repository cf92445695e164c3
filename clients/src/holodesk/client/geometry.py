"""Maps frame pixels to physical pixels of the virtual desktop, exactly.

    desktop = source.origin + p * source.size / frame.size

computed in floating point and rounded once, at the very end. A point outside the
frame, or one that lands in a gap between displays, is an error: silently clamping
it would click somewhere the policy never chose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from holodesk.client.frames import SentFrame
from holodesk.platform.base import DisplayInfo


class OffScreenError(ValueError):
    """The point does not lie on the captured region or on any display."""


def _round_half_up(value: float) -> int:
    # Python's round() rounds halves to even, which would bias alternate pixels.
    return math.floor(value + 0.5)


def _axis(p: float, frame_size: int, origin: int, source_size: int, name: str) -> int:
    if not (math.isfinite(p) and 0 <= p < frame_size):
        raise OffScreenError(f"{name}={p} is outside the frame (0 <= {name} < {frame_size})")
    exact = origin + p * source_size / frame_size
    # A point in the right half of the last physical pixel rounds onto the edge
    # just past the region; it lies inside that last pixel, so pick it.
    return min(_round_half_up(exact), origin + source_size - 1)


def frame_to_desktop(frame: SentFrame, x: float, y: float) -> tuple[int, int]:
    """The physical pixel of the virtual desktop under frame point (x, y)."""
    src = frame.source
    return (
        _axis(x, frame.width, src.x, src.width, "x"),
        _axis(y, frame.height, src.y, src.height, "y"),
    )


def desktop_to_frame(frame: SentFrame, x: float, y: float) -> tuple[float, float]:
    """The inverse mapping, unrounded (for tests and for drawing on frames)."""
    src = frame.source
    return (
        (x - src.x) * frame.width / src.width,
        (y - src.y) * frame.height / src.height,
    )


def map_point(
    frame: SentFrame, x: float, y: float, displays: Sequence[DisplayInfo]
) -> tuple[int, int]:
    """frame_to_desktop, then checked to land on a display."""
    dx, dy = frame_to_desktop(frame, x, y)
    if not any(d.bounds.contains(dx, dy) for d in displays):
        raise OffScreenError(
            f"frame point ({x}, {y}) maps to desktop pixel ({dx}, {dy}), which is on no display"
        )
    return dx, dy
