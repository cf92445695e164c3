"""Frames -> the images the model sees (resized by the dialect's rule, once).

A model image is made once per screen content (the policy's cache keys it by the
frame's content), from pixels the daemon already has when it rebuilt a delta, and
resized only where no one else will: an in-process engine that runs the model's
own processor resizes anyway, so where the dialect's coordinates cannot depend on
the exact size (normalized ones) and the processor's rule is the dialect's, the
frame's pixels go to it as they are.
"""

from __future__ import annotations

import io

from PIL import Image

from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding


def model_image(
    frame: EncodedFrame,
    geometry: ImageGeometry,
    encoding: ImageEncoding,
    quality: int,
    *,
    leave_resize: bool = False,
    pixels: Image.Image | None = None,
) -> ImagePart:
    """CPU-bound (decode, resize): call it off the event loop.

    `leave_resize`: the engine's processor resizes to the geometry's image itself.
    `pixels`: the frame already decoded (a rebuilt delta's canvas), so it is not
    decoded again.
    """
    target = geometry.model_image
    size = (target.width, target.height)
    if target == frame.size and encoding is frame.encoding:
        rgb = None if pixels is None else pixels.convert("RGB")
        return ImagePart(frame.data, encoding.mime_type, *size, rgb, content_id=frame.content_key)
    image = pixels if pixels is not None else _decode(frame.data)
    if image.size == size or leave_resize:
        # The pixels as they came: an engine that sees this content again knows it.
        return ImagePart.of_pixels(
            image, encoding.mime_type, quality, size=size, content_id=frame.content_key
        )
    resized = image.convert("RGB").resize(size, Image.Resampling.BICUBIC)
    # Pixels, not bytes: an in-process engine takes them as they are, and a remote
    # one has them encoded (in `encoding`) when it builds its request.
    content_id = f"{frame.content_key}@{target.width}x{target.height}"
    return ImagePart.of_pixels(resized, encoding.mime_type, quality, content_id=content_id)


def _decode(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as opened:
        return opened.convert("RGB")
