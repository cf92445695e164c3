"""A Locate answer out: a policy's Location -> agent.proto's Location, its box
rounded outward to whole pixels and its texts cut to their limits; and what the
policy's answers depend on (Pinning -> PolicyPinning), for Locate and GetServerInfo.
"""

from __future__ import annotations

from holodesk.daemon.convert.geometry import box_outward, point_to_pb, rect_to_pb
from holodesk.daemon.policies.base import Location, Pinning
from holodesk.proto import limits
from holodesk.proto.limits import clip
from holodesk.proto.v1 import agent_pb2


def location_to_pb(location: Location) -> agent_pb2.Location:
    out = agent_pb2.Location(
        description=clip(location.description, limits.REASON_CHARS),
        found=location.found,
        raw_output=clip(location.raw_output, limits.COMPLETION_CHARS),
        status=_status(location),
    )
    if location.point is not None:
        out.point.CopyFrom(point_to_pb(location.point))
    if location.box is not None:
        out.box.CopyFrom(rect_to_pb(box_outward(location.box)))
    return out


def _status(location: Location) -> agent_pb2.LocationStatus.ValueType:
    if location.found:
        return agent_pb2.LOCATION_STATUS_FOUND
    if location.absent:
        return agent_pb2.LOCATION_STATUS_ABSENT
    return agent_pb2.LOCATION_STATUS_UNPARSEABLE


def pinning_to_pb(pinning: Pinning) -> agent_pb2.PolicyPinning:
    def name(text: str) -> str:
        return clip(text, limits.NAME_CHARS)

    out = agent_pb2.PolicyPinning(
        policy=name(pinning.policy),
        model=name(pinning.model),
        engine=name(pinning.engine),
        dialect=name(pinning.dialect),
        prompt_hash=name(pinning.prompt_hash),
        resize_rule=name(pinning.resize_rule),
        coordinates=name(pinning.coordinates),
        policy_version=pinning.policy_version,
        policy_version_label=name(pinning.policy_version_label),
    )
    sampling = pinning.sampling
    if sampling is not None:
        out.sampling.temperature = sampling.temperature
        out.sampling.top_p = sampling.top_p
        out.sampling.max_tokens = sampling.max_tokens
        if sampling.seed is not None:
            out.sampling.seed = sampling.seed
    return out
