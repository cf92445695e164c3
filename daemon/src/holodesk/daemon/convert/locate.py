"""A Locate answer out: a policy's Location -> agent.proto's Location, its box
rounded outward to whole pixels and its texts cut to their limits.
"""

from __future__ import annotations

from holodesk.daemon.convert.geometry import box_outward, point_to_pb, rect_to_pb
from holodesk.daemon.policies.base import Location
from holodesk.proto import limits
from holodesk.proto.limits import clip
from holodesk.proto.v1 import agent_pb2


def location_to_pb(location: Location) -> agent_pb2.Location:
    out = agent_pb2.Location(
        description=clip(location.description, limits.REASON_CHARS),
        found=location.found,
        raw_output=clip(location.raw_output, limits.COMPLETION_CHARS),
    )
    if location.point is not None:
        out.point.CopyFrom(point_to_pb(location.point))
    if location.box is not None:
        out.box.CopyFrom(rect_to_pb(box_outward(location.box)))
    return out
