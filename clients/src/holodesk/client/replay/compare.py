"""Screen comparison for replay: how much of a frame changed, where, and a picture of it.

A pixel "differs" when any channel differs by more than a tolerance: lossy
encodings (JPEG, WebP) and resampling jitter by a few levels, so an exact
comparison would report noise.

Two measures, because a fraction of the whole frame cannot see a wrong word: an
app that received "scripted hiscripted hi" instead of "scripted hi" differs in
0.08% of a 1280x800 frame, far under any global threshold that tolerates noise.
So the changes are also counted in the densest window of the frame shaped like a
line of text (a tenth of the frame wide, a quarter of that high): there the
doubled text fills 19% (28% at 640x400); an 11-16 pt clock going 13:00 -> 13:01
2-5%, 12:59 -> 13:00 (three digits) 4-9%; a 24 pt clock 7-9% and 13-17% (Tk
on Xvfb, at 1280x800 and 640x400; the runner's DEFAULT_LOCAL_THRESHOLD, 12%,
lets through all but the big clock's three-digit change).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageChops, ImageDraw

DEFAULT_TOLERANCE = 24
# A text line's window: this fraction of the frame's width, a quarter of that high.
WINDOW_WIDTH_FRACTION = 0.1
_DIFF_COLOR = (255, 0, 64)
_BOX_COLOR = (255, 200, 0)


@dataclass(frozen=True)
class FrameDiff:
    width: int
    height: int
    # Pixels differing beyond the tolerance.
    changed: int
    # Bounding box of the changes (left, top, right, bottom; right/bottom exclusive).
    bbox: tuple[int, int, int, int] | None
    # Pixels differing in the densest text-line-shaped window, and that window.
    densest: int = 0
    window: tuple[int, int, int, int] | None = None

    @property
    def fraction(self) -> float:
        total = self.width * self.height
        return self.changed / total if total else 0.0

    @property
    def local_fraction(self) -> float:
        """Share of the densest window's pixels that differ: a few wrong glyphs show here."""
        if self.window is None:
            return 0.0
        left, top, right, bottom = self.window
        area = (right - left) * (bottom - top)
        return self.densest / area if area else 0.0


def difference_mask(
    recorded: Image.Image, replayed: Image.Image, tolerance: int = DEFAULT_TOLERANCE
) -> Image.Image:
    """An "L" mask, 255 where the images differ beyond `tolerance` (same size required)."""
    if recorded.size != replayed.size:
        raise ValueError(f"cannot compare a {recorded.size} frame with a {replayed.size} one")
    if not 0 <= tolerance <= 255:
        raise ValueError(f"tolerance must be 0-255, got {tolerance}")
    red, green, blue = ImageChops.difference(
        recorded.convert("RGB"), replayed.convert("RGB")
    ).split()
    peak = ImageChops.lighter(ImageChops.lighter(red, green), blue)
    table = [255 if level > tolerance else 0 for level in range(256)]
    return peak.point(table)


def window_size(width: int, height: int) -> tuple[int, int]:
    """The text-line window for a frame: wide enough for a word, as high as a line."""
    across = min(width, max(16, round(width * WINDOW_WIDTH_FRACTION)))
    return across, min(height, max(4, round(across / 4)))


def measure(mask: Image.Image) -> FrameDiff:
    changed = mask.histogram()[255]
    bbox = mask.getbbox()
    if bbox is None or mask.width == 0 or mask.height == 0:
        return FrameDiff(mask.width, mask.height, changed, bbox)
    densest, window = densest_window(mask, window_size(mask.width, mask.height))
    return FrameDiff(mask.width, mask.height, changed, bbox, densest, window)


def densest_window(
    mask: Image.Image, size: tuple[int, int]
) -> tuple[int, tuple[int, int, int, int]]:
    """The most differing pixels any `size` window of the mask holds, and that window.

    A summed-area table gives every window's count at once (exact, one pass).
    """
    across, down = size
    table = np.zeros((mask.height + 1, mask.width + 1), dtype=np.int64)
    table[1:, 1:] = (np.asarray(mask) > 0).cumsum(axis=0).cumsum(axis=1)
    counts = (
        table[down:, across:]
        - table[:-down, across:]
        - table[down:, :-across]
        + table[:-down, :-across]
    )
    top, left = np.unravel_index(int(np.argmax(counts)), counts.shape)
    return int(counts[top, left]), (int(left), int(top), int(left) + across, int(top) + down)


def compare(
    recorded: Image.Image, replayed: Image.Image, tolerance: int = DEFAULT_TOLERANCE
) -> FrameDiff:
    return measure(difference_mask(recorded, replayed, tolerance))


def side_by_side(recorded: Image.Image, replayed: Image.Image, mask: Image.Image) -> Image.Image:
    """[recorded | replayed | the replay dimmed, changes in red, their bounding box]."""
    width, height = recorded.size
    gap = 8
    canvas = Image.new("RGB", (width * 3 + gap * 2, height), (255, 255, 255))
    canvas.paste(recorded.convert("RGB"), (0, 0))
    canvas.paste(replayed.convert("RGB"), (width + gap, 0))
    dimmed = Image.blend(replayed.convert("RGB"), Image.new("RGB", (width, height)), 0.6)
    dimmed.paste(_DIFF_COLOR, (0, 0, width, height), mask)
    bbox = mask.getbbox()
    if bbox is not None:
        left, top, right, bottom = bbox
        ImageDraw.Draw(dimmed).rectangle(
            (left, top, right - 1, bottom - 1), outline=_BOX_COLOR, width=2
        )
    canvas.paste(dimmed, ((width + gap) * 2, 0))
    return canvas
