"""What AgentService.Locate found for one description, in the pixels of the image sent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from holodesk.platform.base import Region
from holodesk.values.generation import Sampling

# Why a description was or was not found (agent.proto's LocationStatus): "absent", the
# policy says the target is not in the image; "unparseable", its answer could not be
# read; "unreported", a daemon older than the status said only found or not.
LocationStatus = Literal["found", "absent", "unparseable", "unreported"]


@dataclass(frozen=True)
class Location:
    description: str
    found: bool
    # The point to act on, in image pixels (None when not found).
    x: float | None = None
    y: float | None = None
    # The element's box, where the policy gives one (whole pixels, rounded outward).
    box: Region | None = None
    # The policy's raw output, for annotation audits.
    raw_output: str = ""
    status: LocationStatus = "unreported"


@dataclass(frozen=True)
class PolicyPinning:
    """What answered a Locate call and what its answers depend on (agent.proto's
    PolicyPinning): the model, the dialect and its prompt hash, the resize rule and
    the sampling. Empty strings: the policy has no such part; None from `pinning_from_pb`
    when the daemon predates the field."""

    policy: str
    model: str = ""
    engine: str = ""
    dialect: str = ""
    prompt_hash: str = ""
    resize_rule: str = ""
    coordinates: str = ""
    # How a Locate answer is sampled (None: the policy does not sample).
    sampling: Sampling | None = None
    policy_version: int = 0
    policy_version_label: str = ""
