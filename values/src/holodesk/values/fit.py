"""The size a frame is downsized to: the one rule the client and the daemon share.

The client downsizes each screen to the daemon's FrameSpec box; the daemon works
out, from the screen alone, which size the client sent (a dialect's coordinates
depend on it). Both call `fit_in_box`, so the two can never disagree by a pixel.
"""

from __future__ import annotations


def fit_in_box(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """The largest size of the same aspect that fits the box, never upscaled and
    never below one pixel; a bound of 0 (or less) leaves that side unbounded.

    ValueError for an empty size: there is nothing to fit."""
    if width <= 0 or height <= 0:
        raise ValueError(f"cannot fit an empty size ({width}x{height})")
    scale = 1.0
    if max_width > 0:
        scale = min(scale, max_width / width)
    if max_height > 0:
        scale = min(scale, max_height / height)
    if scale >= 1.0:
        return width, height
    # round() of a value <= an integer bound never exceeds it, so the box holds.
    return max(1, round(width * scale)), max(1, round(height * scale))
