"""Frames -> the images the model sees (resized by the dialect's rule)."""

from __future__ import annotations

import io

from PIL import Image

from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding


def model_image(
    frame: EncodedFrame, geometry: ImageGeometry, encoding: ImageEncoding, quality: int
) -> ImagePart:
    """CPU-bound (decode, resize): call it off the event loop."""
    target = geometry.model_image
    if target == frame.size and encoding is frame.encoding:
        return ImagePart(frame.data, encoding.mime_type, target.width, target.height)
    with Image.open(io.BytesIO(frame.data)) as opened:
        image = opened.convert("RGB")
    if (image.width, image.height) != (target.width, target.height):
        image = image.resize((target.width, target.height), Image.Resampling.BICUBIC)
    # Pixels, not bytes: an in-process engine takes them as they are, and a remote
    # one has them encoded (in `encoding`) when it builds its request.
    return ImagePart.of_pixels(image, encoding.mime_type, quality)
