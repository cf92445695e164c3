"""Paint redacted desktop regions black in a captured image, before anything else."""

from __future__ import annotations

import math
from collections.abc import Sequence

from PIL import Image, ImageDraw

from holodesk.platform.base import Region

BLACK = (0, 0, 0)


def intersect(a: Region, b: Region) -> Region | None:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.right, b.right), min(a.bottom, b.bottom)
    if right <= left or bottom <= top:
        return None
    return Region(left, top, right - left, bottom - top)


def redact(image: Image.Image, source: Region, regions: Sequence[Region]) -> Image.Image:
    """`image` shows the desktop region `source`; returns a copy with `regions` black.

    Applied at capture resolution, before downsizing and encoding, so no redacted
    pixel can reach the encoder (downsizing only ever blends black into the edges).
    Should a backend's image not be one pixel per desktop pixel, the boxes are
    scaled and rounded outwards, so they never shrink.
    """
    hits = [r for r in (intersect(source, region) for region in regions) if r is not None]
    if not hits:
        return image
    sx = image.width / source.width
    sy = image.height / source.height
    image = image.copy()  # never paint on a buffer a backend may reuse
    draw = ImageDraw.Draw(image)
    for hit in hits:
        left = math.floor((hit.x - source.x) * sx)
        top = math.floor((hit.y - source.y) * sy)
        right = math.ceil((hit.right - source.x) * sx)
        bottom = math.ceil((hit.bottom - source.y) * sy)
        draw.rectangle((left, top, right - 1, bottom - 1), fill=BLACK)
    return image
