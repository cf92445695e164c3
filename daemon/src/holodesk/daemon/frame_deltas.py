"""Delta frames (Frame.base_frame_id): checked, then rebuilt into ordinary frames.

A client whose FrameSpec says accept_deltas may send a frame as "frame B with
these patches painted over it" (no patches: the screen did not change). The daemon
checks the delta against its base and rebuilds the full image here, so everything
downstream (policies, the history window, recordings) only ever sees a normal
EncodedFrame, exactly the pixels the client meant.

Memory stays bounded because frames stay encoded: the base is decoded only while
a delta is rebuilt, and the result is re-encoded losslessly right away (lossless,
so a later delta on it rebuilds exactly what the client expects: no drift). An
unchanged screen costs nothing: the new frame shares its base's bytes.

Why rebuild eagerly instead of keeping (base, patches) and rebuilding on first
read: every policy reads the newest frame at once, so laziness would defer the
work, not save it, and a chain of lazy frames would pin every base it was built
on, outside the history window's bound. (bench_client_pipeline.py measures the
rebuild: decode + paint + lossless encode.)
"""

from __future__ import annotations

import asyncio
import io
import logging
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from PIL import Image, UnidentifiedImageError

from holodesk.daemon.decoded_screens import DecodedScreens
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FrameLimits, ImageEncoding, read_header
from holodesk.daemon.geometry import Rect, Size
from holodesk.data.png import exact_palette, paint_indexed

log = logging.getLogger(__name__)

# More patches than this is not a screen update; a client should send a full frame.
MAX_PATCHES = 1024
# Patches may overlap (painted in order), but not repaint the frame many times over.
MAX_PATCH_AREA = 4  # frames' worth of pixels
# How rebuilt frames are stored: lossless (a later delta paints on exact pixels)
# and fast. Screens of up to 256 colours (most: see holodesk.data.png) as indexed
# PNG at zlib level 1: 3-5x faster to encode than the RGB alternatives and what the
# client sends, so a dialect that asks for PNG passes the frame through as it is.
# Others as WebP lossless at its fastest effort: about as fast as RGB PNG level 1
# and 35-40% smaller (bench_client_pipeline.py measures both).
REBUILT_PNG_LEVEL = 1


@dataclass(frozen=True)
class FramePatch:
    """New pixels: `rect` of the frame, as an image of exactly its size."""

    rect: Rect
    encoding: ImageEncoding
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class FrameDelta:
    """A frame sent as its base frame with patches painted over it, in order."""

    frame_id: str
    size: Size
    base_frame_id: str
    patches: tuple[FramePatch, ...] = ()
    display_id: str = ""
    source: Rect | None = None
    scale_factor: float = 1.0

    @property
    def wire_bytes(self) -> int:
        return sum(len(p.data) for p in self.patches)


async def resolve(
    delta: FrameDelta,
    held: Iterable[EncodedFrame],
    limits: FrameLimits,
    where: str,
    decoded: DecodedScreens | None = None,
) -> EncodedFrame:
    """The full frame a delta stands for; InvalidArgument (naming the field) if malformed.

    `held`: the frames the session still holds (its history window); the base must
    be one of them. Decoding and encoding run in a worker thread. `decoded`: screens
    rebuilt lately: a base rebuilt by the previous step is painted on, not decoded
    again, and the rebuilt screen is kept there for the policy and the next delta.
    """
    base = find_base(delta, held, where)
    validate_delta(delta, base, limits, where)
    if not delta.patches:
        frame = base.renamed(delta.frame_id)
    else:
        frame = await asyncio.to_thread(rebuild, delta, base, where, decoded)
    log.debug(
        "frame %s: delta on %s, %d patch(es), %d bytes sent, %d bytes rebuilt",
        delta.frame_id,
        base.frame_id,
        len(delta.patches),
        delta.wire_bytes,
        len(frame.data),
    )
    return frame


def find_base(delta: FrameDelta, held: Iterable[EncodedFrame], where: str) -> EncodedFrame:
    frames = list(held)
    for frame in reversed(frames):
        if frame.frame_id == delta.base_frame_id:
            return frame
    holds = ", ".join(repr(f.frame_id) for f in frames) or "none"
    raise InvalidArgument(
        f"{where}.base_frame_id",
        f"unknown base frame {delta.base_frame_id!r}: a delta must build on the session's "
        f"previous frame or one the daemon still holds (held: {holds}); after a reconnect "
        "send a full frame first",
    )


def validate_delta(delta: FrameDelta, base: EncodedFrame, limits: FrameLimits, where: str) -> None:
    """Raise InvalidArgument unless the delta fits its base and the limits."""
    if not delta.frame_id:
        raise InvalidArgument(f"{where}.frame_id", "a frame needs an id")
    if delta.size != base.size:
        raise InvalidArgument(
            f"{where}.size",
            f"{delta.size.width}x{delta.size.height}, but base frame {base.frame_id!r} is "
            f"{base.size.width}x{base.size.height}: a delta keeps its base's size",
        )
    for name, mine, theirs in (
        ("display_id", delta.display_id, base.display_id),
        ("source", delta.source, base.source),
        ("scale_factor", delta.scale_factor, base.scale_factor),
    ):
        if mine != theirs:
            raise InvalidArgument(
                f"{where}.{name}",
                f"{mine!r}, but base frame {base.frame_id!r} has {theirs!r}: a delta keeps "
                "its base's display, source region and scale (send a full frame instead)",
            )
    if len(delta.patches) > MAX_PATCHES:
        raise InvalidArgument(
            f"{where}.patches",
            f"{len(delta.patches)} patches, above the limit of {MAX_PATCHES}: send a full frame",
        )
    if delta.wire_bytes > limits.max_bytes:
        raise InvalidArgument(
            f"{where}.patches",
            f"{delta.wire_bytes} bytes of patches, above the frame limit of {limits.max_bytes}",
        )
    area = 0
    for index, patch in enumerate(delta.patches):
        _check_patch(patch, delta.size, f"{where}.patches[{index}]")
        area += patch.rect.width * patch.rect.height
    if area > MAX_PATCH_AREA * delta.size.pixels:
        raise InvalidArgument(
            f"{where}.patches",
            f"the patches cover {area} pixels, over {MAX_PATCH_AREA}x the frame's "
            f"{delta.size.pixels}: send a full frame",
        )


def _check_patch(patch: FramePatch, size: Size, where: str) -> None:
    rect = patch.rect
    if rect.width <= 0 or rect.height <= 0:
        raise InvalidArgument(f"{where}.rect", "width and height must be positive")
    inside = rect.x >= 0 and rect.x + rect.width <= size.width
    inside = inside and rect.y >= 0 and rect.y + rect.height <= size.height
    if not inside:
        raise InvalidArgument(
            f"{where}.rect",
            f"{rect.width}x{rect.height} at ({rect.x}, {rect.y}) is not inside the "
            f"{size.width}x{size.height} frame",
        )
    if not patch.data:
        raise InvalidArgument(f"{where}.data", "the patch has no image bytes")
    fmt, image_size = read_header(patch.data, where)
    if fmt != patch.encoding.pillow_format:
        raise InvalidArgument(
            f"{where}.encoding", f"declared {patch.encoding.value} but the bytes are {fmt}"
        )
    if image_size != Size(rect.width, rect.height):
        raise InvalidArgument(
            f"{where}.data",
            f"the image is {image_size.width}x{image_size.height}, but its rect is "
            f"{rect.width}x{rect.height}",
        )


def rebuild(
    delta: FrameDelta, base: EncodedFrame, where: str, decoded: DecodedScreens | None = None
) -> EncodedFrame:
    """Paint the (validated) patches over the decoded base; encode the result losslessly.

    A base stored as indexed PNG stays indexed while the patches' colours fit its
    palette: only the patches are mapped, and the frame is encoded as it is
    (at 1280x800, ~3x less work than re-indexing the whole frame every step).
    """
    canvas = decoded.copy_of(base.content_key) if decoded is not None else None
    if canvas is None:
        canvas = _decode(base.data, f"{where}.base_frame_id", f"base frame {base.frame_id!r}")
    for index, patch in enumerate(delta.patches):
        field_name = f"{where}.patches[{index}].data"
        pixels = _decode(patch.data, field_name, "the patch").convert("RGB")
        at = (patch.rect.x, patch.rect.y)
        if not paint_indexed(canvas, pixels, at):
            canvas = canvas.convert("RGB")
            canvas.paste(pixels, at)
    encoding, data = encode_lossless(canvas)
    frame = EncodedFrame(
        frame_id=delta.frame_id,
        size=delta.size,
        encoding=encoding,
        data=data,
        display_id=delta.display_id,
        source=delta.source,
        scale_factor=delta.scale_factor,
    )
    if decoded is not None:
        decoded.keep(frame.content_key, canvas)
    return frame


def encode_lossless(image: Image.Image) -> tuple[ImageEncoding, bytes]:
    """Indexed PNG when the image is indexed or has at most 256 colours, else WebP
    lossless."""
    indexed = image if image.mode == "P" else exact_palette(image)
    buffer = io.BytesIO()
    if indexed is not None:
        indexed.save(buffer, "PNG", compress_level=REBUILT_PNG_LEVEL)
        return ImageEncoding.PNG, buffer.getvalue()
    # method 0 / quality 0: WebP's fastest lossless effort (still exact).
    image.save(buffer, "WEBP", lossless=True, method=0, quality=0)
    return ImageEncoding.WEBP, buffer.getvalue()


def _decode(data: bytes, field_name: str, what: str) -> Image.Image:
    """The image, loaded: indexed ("P") images stay indexed, the rest become RGB."""
    try:
        with warnings.catch_warnings():
            # Sizes were checked against the frame limits already.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                return image if image.mode == "P" else image.convert("RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise InvalidArgument(
            field_name, f"{what} cannot be decoded ({type(exc).__name__}: {exc})"
        ) from exc
