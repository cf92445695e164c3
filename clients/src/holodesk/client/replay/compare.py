"""Screen comparison for replay: how much of a frame changed, where, and a picture of it.

A pixel "differs" when any channel differs by more than a tolerance: lossy
encodings (JPEG, WebP) and resampling jitter by a few levels, so an exact
comparison would report noise. Everything runs in Pillow's C code.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageChops, ImageDraw

DEFAULT_TOLERANCE = 24
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

    @property
    def fraction(self) -> float:
        total = self.width * self.height
        return self.changed / total if total else 0.0


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


def measure(mask: Image.Image) -> FrameDiff:
    return FrameDiff(mask.width, mask.height, mask.histogram()[255], mask.getbbox())


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
