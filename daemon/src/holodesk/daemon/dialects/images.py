"""Frames -> the images the model sees (resized by the dialect's rule, encoded)."""

from __future__ import annotations

import io

from PIL import Image

from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding


def model_image(
    frame: EncodedFrame, geometry: ImageGeometry, encoding: ImageEncoding, quality: int
) -> ImagePart:
    """CPU-bound (decode, resize, encode): call it off the event loop."""
    target = geometry.model_image
    if target == frame.size and encoding is frame.encoding:
        return ImagePart(frame.data, encoding.mime_type, target.width, target.height)
    with Image.open(io.BytesIO(frame.data)) as opened:
        image = opened.convert("RGB")
    if (image.width, image.height) != (target.width, target.height):
        image = image.resize((target.width, target.height), Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    if encoding is ImageEncoding.PNG:
        # Fast zlib: the engine decodes this image right away, and every step re-makes the
        # window's images. Level 1 took ~1/3 less CPU than the default (6) on 1080p
        # screens, and its bytes were no larger (tests/bench/bench_daemon_overhead.py).
        image.save(buffer, format="PNG", compress_level=1)
    else:
        image.save(buffer, format=encoding.pillow_format, quality=quality)
    return ImagePart(buffer.getvalue(), encoding.mime_type, target.width, target.height)
