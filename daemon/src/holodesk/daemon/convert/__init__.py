"""The only place where the daemon converts protobuf messages <-> internal values.

Inbound conversions validate shape and name the offending field in an
InvalidArgument (e.g. "observation.frame.size: width and height must be set").
Each first holds its message to the contract's length limits
(holodesk.proto.limits, `check_limits`), before any value is converted, logged or
echoed in an error; deeper checks (decodability, frame limits, protocol state)
happen elsewhere. Outbound human-readable text is cut to its limit (`clip`), so
the daemon never sends more than the contract promises.

One package, a module per feature, each conversion beside its kind of message:
`checks` (check_limits), `geometry` (points, rects, box_outward), `frames` (full and
delta frames in, a full frame out, FrameSpec), `actions` (actions out, results in
and out), `generation` (sampling in, a step's generation out), `sessions`
(SessionStart in; SessionStarted, SessionEnded, SessionInfo, a session's client and
displays out), `locate` (a Location and a policy's pinning out), `trainer`
(TrainerService's update mode and folders in, policy versions and updates out).
Callers keep importing `holodesk.daemon.convert` and call `convert.NAME`: every
public name is here.
"""

from holodesk.daemon.convert.actions import (
    action_to_pb,
    actions_to_pb,
    actions_violation,
    result_from_pb,
    result_to_pb,
    results_from_pb,
)
from holodesk.daemon.convert.checks import check_limits
from holodesk.daemon.convert.frames import (
    encoding_from_pb,
    frame_delta_from_pb,
    frame_from_pb,
    frame_spec_to_pb,
    frame_to_pb,
)
from holodesk.daemon.convert.generation import generation_to_pb, sampling_from_pb
from holodesk.daemon.convert.geometry import box_outward, point_to_pb, rect_from_pb, rect_to_pb
from holodesk.daemon.convert.locate import location_to_pb, pinning_to_pb
from holodesk.daemon.convert.sessions import (
    client_info_from_pb,
    client_info_to_pb,
    display_from_pb,
    display_to_pb,
    ending_to_pb,
    held_to_pb,
    observation_from_pb,
    session_info_to_pb,
    session_request_from_pb,
    session_started_to_pb,
    timestamp_to_pb,
)
from holodesk.daemon.convert.trainer import (
    folder_from_pb,
    policy_version_to_pb,
    update_mode_from_pb,
    weight_update_to_pb,
)

__all__ = [
    "action_to_pb",
    "actions_to_pb",
    "actions_violation",
    "box_outward",
    "check_limits",
    "client_info_from_pb",
    "client_info_to_pb",
    "display_from_pb",
    "display_to_pb",
    "encoding_from_pb",
    "ending_to_pb",
    "folder_from_pb",
    "frame_delta_from_pb",
    "frame_from_pb",
    "frame_spec_to_pb",
    "frame_to_pb",
    "generation_to_pb",
    "held_to_pb",
    "location_to_pb",
    "observation_from_pb",
    "pinning_to_pb",
    "point_to_pb",
    "policy_version_to_pb",
    "rect_from_pb",
    "rect_to_pb",
    "result_from_pb",
    "result_to_pb",
    "results_from_pb",
    "sampling_from_pb",
    "session_info_to_pb",
    "session_request_from_pb",
    "session_started_to_pb",
    "timestamp_to_pb",
    "update_mode_from_pb",
    "weight_update_to_pb",
]
