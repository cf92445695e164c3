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
        image.save(buffer, format="PNG")
    else:
        image.save(buffer, format=encoding.pillow_format, quality=quality)
    return ImagePart(buffer.getvalue(), encoding.mime_type, target.width, target.height)
