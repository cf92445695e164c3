"""What AgentService.Locate found for one description, in the pixels of the image sent."""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.platform.base import Region


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
