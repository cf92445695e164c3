"""Frames -> the images the model sees (resized by the dialect's rule, once).

A model image is made once per screen content (the policy's cache keys it by the
frame's content), from pixels the daemon already has when it rebuilt a delta, and
resized only where no one else will: an in-process engine that runs the model's
own processor resizes anyway, so where the dialect's coordinates cannot depend on
the exact size (normalized ones) and the processor's rule is the dialect's, the
frame's pixels go to it as they are.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

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
    """The frame's model image: at once from `pixels` (the frame already decoded, a
    rebuilt delta's canvas), else lazily, decoded only if an engine asks for it.

    `leave_resize`: the engine's processor resizes to the geometry's image itself.
    CPU-bound when pixels are given or asked for: off the event loop.
    """
    target = geometry.model_image
    size = (target.width, target.height)
    if target == frame.size and encoding is frame.encoding:
        rgb = None if pixels is None else pixels.convert("RGB")
        return ImagePart(frame.data, encoding.mime_type, *size, rgb, content_id=frame.content_key)
    # The pixels as they came when nothing resizes them here (an engine seeing this
    # content again knows it by its key), else resized by the dialect's rule.
    as_sent = leave_resize or frame.size == target
    content_id = frame.content_key if as_sent else f"{frame.content_key}@{size[0]}x{size[1]}"
    make = functools.partial(_prepare, None if as_sent else size)
    if pixels is not None:
        return ImagePart.of_pixels(
            make(pixels), encoding.mime_type, quality, size=size, content_id=content_id
        )
    return ImagePart(
        b"",
        encoding.mime_type,
        *size,
        quality=quality,
        content_id=content_id,
        loader=functools.partial(_load, frame.data, make),
        source=frame.data,
    )


def _prepare(size: tuple[int, int] | None, image: Image.Image) -> Image.Image:
    rgb = image.convert("RGB") if image.mode != "RGB" else image
    if size is None or rgb.size == size:
        return rgb
    # Pixels, not bytes: an in-process engine takes them as they are, and a remote
    # one has them encoded (in the dialect's encoding) when it builds its request.
    return rgb.resize(size, Image.Resampling.BICUBIC)


def _load(data: bytes, prepare: Callable[[Image.Image], Image.Image]) -> Image.Image:
    return prepare(_decode(data))


def _decode(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as opened:
        return opened.convert("RGB")
