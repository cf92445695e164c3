"""Locate things in an image file through the daemon (AgentService.Locate).

The image goes as it is when it is PNG, JPEG or WebP (else re-encoded as PNG),
at its own size, so every point and box that comes back is in the file's pixels.
All descriptions of one image go in one request (up to `batch` per request).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import grpc.aio
from PIL import Image, UnidentifiedImageError

from holodesk.client import convert
from holodesk.client.frames import SentFrame
from holodesk.client.locations import Location, PolicyPinning
from holodesk.platform.base import Region
from holodesk.proto.v1 import agent_pb2_grpc
from holodesk.values.encoding import ImageEncoding

# The daemon's limit on descriptions per Locate request.
DEFAULT_BATCH = 64
_AS_IS = {"PNG": ImageEncoding.PNG, "JPEG": ImageEncoding.JPEG, "WEBP": ImageEncoding.WEBP}


class ImageError(ValueError):
    """The file is not an image this client can send."""


@dataclass(frozen=True)
class LoadedImage:
    path: Path
    frame: SentFrame

    @property
    def width(self) -> int:
        return self.frame.width

    @property
    def height(self) -> int:
        return self.frame.height


def load_image(path: Path) -> LoadedImage:
    """The file as a frame: its own bytes when the daemon reads its format, else PNG."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ImageError(f"cannot read {path} as an image: {error}") from error
    return LoadedImage(path, image_frame(data, str(path)))


def image_frame(data: bytes, name: str) -> SentFrame:
    """Image bytes as a frame at their own size (`name` says which image in errors)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            width, height = image.size
            encoding = _AS_IS.get(image.format or "")
            if encoding is None:
                encoding, data = ImageEncoding.PNG, _png(image)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as error:
        raise ImageError(f"cannot read {name} as an image: {error}") from error
    return SentFrame(
        frame_id=uuid.uuid4().hex,
        width=width,
        height=height,
        encoding=encoding,
        data=data,
        display_id="",
        source=Region(0, 0, width, height),
        scale_factor=1.0,
        captured_at=datetime.now(UTC),
    )


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    converted = image if image.mode in ("RGB", "RGBA", "L") else image.convert("RGBA")
    converted.save(buffer, format="PNG")
    return buffer.getvalue()


async def locate(
    channel: grpc.aio.Channel,
    image: LoadedImage,
    descriptions: Sequence[str],
    *,
    policy: str = "",
    batch: int = DEFAULT_BATCH,
    timeout_s: float | None = None,
) -> list[Location]:
    """One Location per description, in order (AioRpcError when the daemon refuses)."""
    if batch < 1:
        raise ValueError(f"batch must be 1 or more, got {batch}")
    found: list[Location] = []
    for start in range(0, len(descriptions), batch):
        chunk = descriptions[start : start + batch]
        answer = await locate_frame(channel, image.frame, chunk, policy=policy, timeout_s=timeout_s)
        found.extend(answer.locations)
    return found


@dataclass(frozen=True)
class LocateAnswer:
    # One per description, in order.
    locations: tuple[Location, ...]
    # What answered (None: a daemon that does not say).
    pinning: PolicyPinning | None


async def locate_frame(
    channel: grpc.aio.Channel,
    frame: SentFrame,
    descriptions: Sequence[str],
    *,
    policy: str = "",
    timeout_s: float | None = None,
) -> LocateAnswer:
    """One Locate request (at most the daemon's 64 descriptions); AioRpcError when the
    daemon refuses, ValueError when it answers the wrong number of locations."""
    stub = agent_pb2_grpc.AgentServiceStub(channel)
    request = convert.locate_request(frame, descriptions, policy)
    response = await stub.Locate(request, timeout=timeout_s)
    if len(response.locations) != len(descriptions):
        raise ValueError(
            f"the daemon answered {len(response.locations)} locations "
            f"for {len(descriptions)} descriptions"
        )
    pinning = convert.pinning_from_pb(response.policy) if response.HasField("policy") else None
    return LocateAnswer(tuple(convert.location_from_pb(x) for x in response.locations), pinning)
