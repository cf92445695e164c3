"""Whole images for the frames a trajectory keeps.

A session that sends delta frames (FrameSpec.accept_deltas) sends most frames
as patches on an earlier one. A trajectory keeps images a caller can use as
they are, so delta frames are rebuilt here: the base image with the patches
painted over it in order, encoded as PNG (lossless: exactly what the daemon
rebuilt and the policy saw).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import replace

from PIL import Image

from holodesk.client.frames import SentFrame
from holodesk.values.encoding import ImageEncoding

log = logging.getLogger(__name__)


def whole_frames(frames: Sequence[SentFrame | None]) -> list[SentFrame | None]:
    """The frames, in order, with every delta frame rebuilt on its base (a frame
    earlier in `frames`); a delta whose base is not there keeps no image."""
    images: dict[str, Image.Image] = {}
    out: list[SentFrame | None] = []
    for frame in frames:
        if frame is None or not frame.is_delta:
            if frame is not None and frame.data:
                images[frame.frame_id] = _decode(frame.data)
            out.append(frame)
            continue
        base = images.get(frame.base_frame_id)
        if base is None:
            log.warning(
                "frame %s is a delta on %s, which the trajectory does not have",
                frame.frame_id,
                frame.base_frame_id,
            )
            out.append(replace(frame, patches=()))
            continue
        image = base.copy()
        for patch in frame.patches:
            image.paste(_decode(patch.data), (patch.x, patch.y))
        images[frame.frame_id] = image
        out.append(
            replace(
                frame, data=_png(image), encoding=ImageEncoding.PNG, base_frame_id="", patches=()
            )
        )
    return out


def _decode(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
