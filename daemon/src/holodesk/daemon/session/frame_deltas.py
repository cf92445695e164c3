"""Delta frames (Frame.base_frame_id): checked, then rebuilt into ordinary frames.

A client whose FrameSpec says accept_deltas may send a frame as "frame B with
these patches painted over it" (no patches: the screen did not change). The daemon
checks the delta against its base and rebuilds it here, so everything downstream
(policies, the history window, recordings) sees an EncodedFrame whose pixels
(frame_pixels.decode) are exactly those the client meant.

A rebuilt frame is kept as the frame it was painted on plus the patches, as the
client sent them (EncodedFrame.patches): re-encoding a 1080p screen losslessly
after every change cost 40-60 ms, most of a changed step, and a window of such
frames held one full image per step. Pixels are made only when someone reads them
(frame_pixels.decode), and the screen a step rebuilt stays decoded for a while
(DecodedScreens), so the policy and the next delta mostly find it there. A chain
that grows past a bound (MAX_CHAIN_PATCHES, or patches weighing half the image they
are painted on and at least MIN_CHAIN_BYTES) is encoded once as a new standalone
image (losslessly, so a later delta on it rebuilds exactly what the client expects:
no drift), so decoding a frame never paints more than that bound. An unchanged
screen costs nothing: the new frame shares its base's bytes.

Why rebuild eagerly instead of keeping (base, patches) unchecked until first read:
the patches are decoded and painted at once, so a patch that does not decode is
refused with the step that sent it, and the policy, which reads the newest frame at
once, finds its pixels made. (bench_client_pipeline.py measures the rebuild.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from holodesk.daemon import frame_pixels
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FrameLimits, FramePatch, read_header
from holodesk.daemon.geometry import Rect, Size
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.proto import limits

log = logging.getLogger(__name__)

# More patches than the contract allows is not a screen update; a client should
# send a full frame.
MAX_PATCHES = limits.MAX_FRAME_PATCHES
# Patches may overlap (painted in order), but not repaint the frame many times over.
MAX_PATCH_AREA = 4  # frames' worth of pixels
# A rebuilt frame's chain of patches, past which it is encoded as a new image: the
# most a decode of it paints (each patch decoded and pasted: ~0.1-0.3 ms), and, at
# one or two patches per changed step, one lossless encode per 32-64 changed steps.
MAX_CHAIN_PATCHES = 64
# ... or once its patches weigh this share of the image they are painted on (big
# changes: painting them costs as much as decoding a new image).
MAX_CHAIN_SHARE = 0.5
# ... but never for less than this: a screen of few colours is a few KiB encoded, and
# typing on it would otherwise re-encode it every other step; painting this much on
# a decode costs a few ms.
MIN_CHAIN_BYTES = 64 * 1024


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
    # When the client captured it (EncodedFrame.captured_at_ns): the rebuilt frame's own.
    captured_at_ns: int | None = None

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
        frame = base.renamed(delta.frame_id, delta.captured_at_ns)
    else:
        frame = await asyncio.to_thread(rebuild, delta, base, where, decoded)
    log.debug(
        "frame %s: delta on %s, %d patch(es), %d bytes sent, %d bytes rebuilt",
        delta.frame_id,
        base.frame_id,
        len(delta.patches),
        delta.wire_bytes,
        frame.nbytes,
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
    """Paint the (validated) patches over the decoded base: the base's bytes plus the
    patches, or a new lossless image once the chain is long (see the module's doc).

    A base stored as indexed PNG stays indexed while the patches' colours fit its
    palette: only the patches are mapped (at 1280x800, ~3x less work than
    re-indexing the whole frame every step).
    """
    patches = frame_pixels.decode_patches(delta.patches, f"{where}.patches")
    frame = base.painted(delta.frame_id, delta.patches, delta.captured_at_ns)
    too_long = _chain_too_long(frame)
    # A base that left the raw tier is painted band by band in its packed form:
    # no whole screen is unpacked for a line of new pixels.
    if (
        decoded is not None
        and not too_long
        and decoded.paint_packed(frame.content_key, base.content_key, patches)
    ):
        return frame
    canvas = decoded.copy_of(base.content_key) if decoded is not None else None
    if canvas is None:
        canvas = frame_pixels.canvas(base, f"{where}.base_frame_id")
    canvas = frame_pixels.paint_decoded(canvas, patches)
    if too_long:
        frame = frame_pixels.encoded_as(frame, canvas)
    if decoded is not None:
        rows = ((p.rect.y, p.rect.y + p.rect.height) for p in delta.patches)
        decoded.keep(frame.content_key, canvas, supersedes=base.content_key, changed_rows=rows)
    return frame


def _chain_too_long(frame: EncodedFrame) -> bool:
    patch_bytes = frame.nbytes - len(frame.data)
    allowed = max(MAX_CHAIN_SHARE * len(frame.data), MIN_CHAIN_BYTES)
    return len(frame.patches) > MAX_CHAIN_PATCHES or patch_bytes > allowed
