"""Frames -> the images the model sees (resized by the dialect's rule, once).

A model image is made once per screen content (the policy's cache keys it by the
frame's content) and lazily: its pixels are made when an engine asks for them, from
the screen the daemon decoded lately when it has it (a rebuilt delta), and resized
only where no one else will: an in-process engine that runs the model's own
processor resizes anyway, so where the dialect's coordinates cannot depend on the
exact size (normalized ones) and the processor's rule is the dialect's, the frame's
pixels go to it as they are. No model image holds pixels of its own: with hundreds
of steps in flight, decoded screens would otherwise pile up beyond any bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from PIL import Image

from holodesk.daemon import frame_pixels
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding

# A content key -> the screen's pixels, if the daemon still has them decoded.
PixelLookup = Callable[[str], Image.Image | None]


def model_image(
    frame: EncodedFrame,
    geometry: ImageGeometry,
    encoding: ImageEncoding,
    quality: int,
    *,
    leave_resize: bool = False,
    decoded: PixelLookup | None = None,
) -> ImagePart:
    """The frame's model image, made when an engine asks for its pixels or bytes.

    `leave_resize`: the engine's processor resizes to the geometry's image itself.
    `decoded`: where the frame's pixels may already be (they are then not decoded).
    """
    target = geometry.model_image
    size = (target.width, target.height)
    if target == frame.size and encoding is frame.encoding and not frame.patches:
        return ImagePart(
            frame.data,
            encoding.mime_type,
            *size,
            content_id=frame.content_key,
            loader=functools.partial(_load, frame, decoded, None),
        )
    # The pixels as they came when nothing resizes them here (an engine seeing this
    # content again knows it by its key), else resized by the dialect's rule.
    as_sent = leave_resize or frame.size == target
    content_id = frame.content_key if as_sent else f"{frame.content_key}@{size[0]}x{size[1]}"
    return ImagePart(
        b"",
        encoding.mime_type,
        *size,
        quality=quality,
        content_id=content_id,
        loader=functools.partial(_load, frame, decoded, None if as_sent else size),
        source=frame.data,
        resized=not as_sent,
    )


def _load(
    frame: EncodedFrame, decoded: PixelLookup | None, size: tuple[int, int] | None
) -> Image.Image:
    kept = decoded(frame.content_key) if decoded is not None else None
    # Engines read pixels and never paint on them, so the shared images both places
    # hand out (a kept screen, a thread's last decode) are passed on as they are: a
    # copy of a 1080p screen is ~1 ms, and the next delta paints on a copy of its own.
    rgb = frame_pixels.decode(frame) if kept is None else kept
    if rgb.mode != "RGB":
        rgb = rgb.convert("RGB")
    if size is None or rgb.size == size:
        return rgb
    # Pixels, not bytes: an in-process engine takes them as they are, and a remote
    # one has them encoded (in the dialect's encoding) when it builds its request.
    return rgb.resize(size, Image.Resampling.BICUBIC)
