"""An observation's frame into its session: the one way a screen enters the daemon.

A full frame is converted and checked here (its bytes against --max-frame-bytes and
the pixel limit, its size against the box the session was asked for); a delta frame
(`base_frame_id` set, when the daemon offered deltas) is rebuilt into a full one by
frame_deltas.py, so nothing downstream (policies, recorder, live view) ever knows
about deltas. The session then takes the frame into its window and tells its
observers (FrameTaken, with what the frame took on the wire for the metrics).
"""

from __future__ import annotations

from holodesk.daemon import convert
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import FrameSpec, check_fits, validate_frame
from holodesk.daemon.session import frame_deltas
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.settings import SessionSettings
from holodesk.proto.v1 import agent_pb2


async def take_frame(
    session: Session,
    observation: agent_pb2.Observation,
    settings: SessionSettings,
    spec: FrameSpec,
) -> None:
    """Check and take the observation's frame (and its user reply) into `session`;
    `spec` is what this stream's frames were asked to look like."""
    if not observation.HasField("frame"):
        raise InvalidArgument("observation.frame", "required (the screen after the actions)")
    sent = observation.frame
    if sent.base_frame_id:
        if not settings.accept_deltas:
            raise InvalidArgument(
                "observation.frame.base_frame_id",
                "this daemon does not accept delta frames (its FrameSpec.accept_deltas "
                "is false): send full frames",
            )
        delta = convert.frame_delta_from_pb(sent, "observation.frame")
        # Rebuilt into a full frame: nothing downstream knows about deltas.
        frame = await frame_deltas.resolve(
            delta,
            session.frames,
            settings.frame_limits,
            "observation.frame",
            settings.decoded_screens,
        )
        wire_bytes = delta.wire_bytes
    else:
        frame = convert.frame_from_pb(sent, "observation.frame")
        # A rebuilt frame needs no such check: its delta was checked against its
        # base, and the daemon made its bytes (reading them back cost ~6% of a step).
        validate_frame(frame, settings.frame_limits, "observation.frame")
        # A delta keeps its base's size, so checking full frames covers both.
        check_fits(frame.size, spec, "observation.frame")
        wire_bytes = len(frame.data)
    # Observers hear FrameTaken: the window's newest, the full image the policy sees.
    session.accept_frame(frame, "observation.frame", wire_bytes=wire_bytes)
    session.user_reply = observation.user_reply
