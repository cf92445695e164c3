"""Fuzz targets for every decoder and validator of what clients send the daemon.

Each target takes arbitrary bytes and may only ever end in one of two ways: it
returns, or the daemon's code raises InvalidArgument (a precise status for the
client). Anything else is a bug. Shared by the hypothesis tests and the atheris
harness (`python -m tests.daemon.atheris_fuzz [CORPUS] -runs=N`).
"""

from __future__ import annotations

import contextlib
import struct

from google.protobuf.message import DecodeError

from holodesk.daemon import convert
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FrameLimits, ImageEncoding, validate_frame
from holodesk.daemon.geometry import Size
from holodesk.proto.v1 import agent_pb2

LIMITS = FrameLimits(max_bytes=1 << 20, max_pixels=4096 * 4096)


def run_session_request(data: bytes) -> None:
    """The bytes as one RunSessionRequest, through every inbound conversion the daemon
    applies to it (the frame's image header included)."""
    try:
        request = agent_pb2.RunSessionRequest.FromString(data)
    except DecodeError:
        return  # gRPC-level garbage: the interceptor turns it into INVALID_ARGUMENT
    with contextlib.suppress(InvalidArgument):
        kind = request.WhichOneof("event")
        if kind == "start":
            convert.session_request_from_pb(request.start)
        elif kind == "observation":
            convert.results_from_pb(request.observation.results, "observation.results")
            if request.observation.HasField("frame"):
                frame = convert.frame_from_pb(request.observation.frame, "observation.frame")
                validate_frame(frame, LIMITS, "observation.frame")


def locate_request(data: bytes) -> None:
    try:
        request = agent_pb2.LocateRequest.FromString(data)
    except DecodeError:
        return
    with contextlib.suppress(InvalidArgument):
        validate_frame(convert.frame_from_pb(request.frame, "frame"), LIMITS, "frame")


def frame_bytes(data: bytes) -> None:
    """validate_frame on arbitrary image bytes; the first 5 bytes pick the declared
    size and encoding, so declarations that match real headers come up too."""
    header, body = data[:5], data[5:]
    width, height, encoding = struct.unpack("<HHB", header.ljust(5, b"\0"))
    frame = EncodedFrame(
        frame_id="f",
        size=Size(width, height),
        encoding=list(ImageEncoding)[encoding % len(ImageEncoding)],
        data=body,
    )
    with contextlib.suppress(InvalidArgument):
        validate_frame(frame, LIMITS)


def all_targets(data: bytes) -> None:
    run_session_request(data)
    locate_request(data)
    frame_bytes(data)
