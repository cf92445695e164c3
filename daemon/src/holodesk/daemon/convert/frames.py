"""Frames <-> frame.proto: full frames, delta frames (patches on a base) and the
FrameSpec the daemon asks the client for; a full frame back out (ComputerService
hands a desktop's screen to its caller).

Apart because a frame's checks (size, scale, a delta's empty encoding and data)
are the frame feature's own, used by frame intake and the computer API alike.
"""

from __future__ import annotations

import math

from google.protobuf import timestamp_pb2

from holodesk.daemon.convert.checks import check_limits
from holodesk.daemon.convert.geometry import rect_from_pb, rect_to_pb
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FramePatch, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.session.frame_deltas import FrameDelta
from holodesk.proto.v1 import frame_pb2, geometry_pb2

_ENCODINGS: dict[frame_pb2.ImageEncoding.ValueType, ImageEncoding] = {
    frame_pb2.IMAGE_ENCODING_PNG: ImageEncoding.PNG,
    frame_pb2.IMAGE_ENCODING_JPEG: ImageEncoding.JPEG,
    frame_pb2.IMAGE_ENCODING_WEBP: ImageEncoding.WEBP,
}

_ENCODINGS_PB = {v: k for k, v in _ENCODINGS.items()}

# google.protobuf.Timestamp's range (0001-01-01 to 9999-12-31 UTC) and nanos per second.
_MIN_SECONDS = -62_135_596_800
_MAX_SECONDS = 253_402_300_799
_NANOS = 1_000_000_000


def encoding_from_pb(value: int, field: str) -> ImageEncoding:
    try:
        return _ENCODINGS[frame_pb2.ImageEncoding.ValueType(value)]
    except KeyError:
        raise InvalidArgument(field, f"unsupported image encoding {value}") from None


def frame_from_pb(frame: frame_pb2.Frame, field: str) -> EncodedFrame:
    """A full frame; delta fields are refused (see frame_delta_from_pb)."""
    check_limits(frame, field)
    if frame.base_frame_id:
        raise InvalidArgument(
            f"{field}.base_frame_id",
            "delta frames are only accepted in a session's observations, when its "
            "FrameSpec.accept_deltas is set; send a full frame here",
        )
    if frame.patches:
        raise InvalidArgument(
            f"{field}.patches", "patches need base_frame_id (the frame they are painted on)"
        )
    scale = _frame_scale(frame, field)
    return EncodedFrame(
        frame_id=frame.frame_id,
        size=Size(frame.size.width, frame.size.height),
        encoding=encoding_from_pb(frame.encoding, f"{field}.encoding"),
        data=frame.data,
        display_id=frame.display_id,
        source=rect_from_pb(frame.source) if frame.HasField("source") else None,
        scale_factor=scale,
        captured_at_ns=_captured_at_ns(frame, field),
    )


def _captured_at_ns(frame: frame_pb2.Frame, field: str) -> int | None:
    """Frame.captured_at in nanoseconds since the epoch, exactly (None when unset); a
    timestamp the contract's Timestamp cannot hold is refused."""
    if not frame.HasField("captured_at"):
        return None
    stamp = frame.captured_at
    if not _MIN_SECONDS <= stamp.seconds <= _MAX_SECONDS or not 0 <= stamp.nanos < _NANOS:
        raise InvalidArgument(
            f"{field}.captured_at",
            f"not a valid timestamp (seconds {stamp.seconds}, nanos {stamp.nanos}): "
            "seconds must lie in years 1-9999 and nanos in [0, 999999999]",
        )
    return stamp.seconds * _NANOS + stamp.nanos


def _captured_at_pb(nanoseconds: int) -> timestamp_pb2.Timestamp:
    seconds, nanos = divmod(nanoseconds, _NANOS)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def _frame_scale(frame: frame_pb2.Frame, field: str) -> float:
    """Checks the size is set too; returns the scale factor (unset: 1.0)."""
    if not frame.HasField("size") or frame.size.width == 0 or frame.size.height == 0:
        raise InvalidArgument(f"{field}.size", "width and height must be set")
    scale = frame.scale_factor if frame.scale_factor != 0 else 1.0
    if not math.isfinite(scale) or scale <= 0:
        raise InvalidArgument(f"{field}.scale_factor", f"must be positive, got {scale}")
    return scale


def frame_delta_from_pb(frame: frame_pb2.Frame, field: str) -> FrameDelta:
    """A delta frame (base_frame_id set): its image lives in the patches alone."""
    check_limits(frame, field)
    scale = _frame_scale(frame, field)
    if frame.encoding != frame_pb2.IMAGE_ENCODING_UNSPECIFIED:
        raise InvalidArgument(
            f"{field}.encoding",
            "must be unset in a delta frame (base_frame_id is set): each patch has its own",
        )
    if frame.data:
        raise InvalidArgument(
            f"{field}.data",
            "must be empty in a delta frame (base_frame_id is set): the patches carry the pixels",
        )
    patches = []
    for index, patch in enumerate(frame.patches):
        where = f"{field}.patches[{index}]"
        if not patch.HasField("rect"):
            raise InvalidArgument(f"{where}.rect", "must be set")
        patches.append(
            FramePatch(
                rect=rect_from_pb(patch.rect),
                encoding=encoding_from_pb(patch.encoding, f"{where}.encoding"),
                data=patch.data,
            )
        )
    return FrameDelta(
        frame_id=frame.frame_id,
        size=Size(frame.size.width, frame.size.height),
        base_frame_id=frame.base_frame_id,
        patches=tuple(patches),
        display_id=frame.display_id,
        source=rect_from_pb(frame.source) if frame.HasField("source") else None,
        scale_factor=scale,
        captured_at_ns=_captured_at_ns(frame, field),
    )


def frame_spec_to_pb(spec: FrameSpec) -> frame_pb2.FrameSpec:
    return frame_pb2.FrameSpec(
        max_width=spec.max_width,
        max_height=spec.max_height,
        encoding=_ENCODINGS_PB[spec.encoding],
        quality=spec.quality,
        max_bytes=spec.max_bytes,
        accept_deltas=spec.accept_deltas,
    )


def frame_to_pb(frame: EncodedFrame) -> frame_pb2.Frame:
    """A full frame (no patches: rebuild a delta with frame_pixels.standalone first)."""
    if frame.patches:
        raise ValueError("frame_to_pb needs a standalone frame")
    out = frame_pb2.Frame(
        frame_id=frame.frame_id,
        size=geometry_pb2.Size(width=frame.size.width, height=frame.size.height),
        encoding=_ENCODINGS_PB[frame.encoding],
        data=frame.data,
        display_id=frame.display_id,
        scale_factor=frame.scale_factor,
    )
    if frame.source is not None:
        out.source.CopyFrom(rect_to_pb(frame.source))
    if frame.captured_at_ns is not None:
        out.captured_at.CopyFrom(_captured_at_pb(frame.captured_at_ns))
    return out
