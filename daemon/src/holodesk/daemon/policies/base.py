"""The Policy protocol: what decides a session's next actions.

A policy is shared by every session of the daemon; per-session state lives in
the `StepContext` the session hands it (holodesk.daemon.steps: frames kept encoded,
a compact record of earlier steps), so policies can batch across sessions freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from holodesk.daemon.actions import ActionKind
from holodesk.daemon.engines.base import SamplingParams
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.geometry import Box, Point, Size
from holodesk.daemon.steps import StepContext


@dataclass(frozen=True)
class Decision:
    """The next actions, in pixels of the context's current frame.

    A Done or Fail action ends the session after the actions before it ran.
    """

    actions: tuple[ActionKind, ...]
    thought: str = ""
    note: str = ""
    raw_output: str = ""
    # Model calls spent, parse retries included.
    attempts: int = 1
    # What the model generated (prompt, every candidate); None for policies without one.
    generation: StepGeneration | None = None


@dataclass(frozen=True)
class Location:
    description: str
    found: bool
    # Frame pixels. The box, where the policy gives one, lies within the frame and
    # contains the point; continuous (the contract rounds it outward to whole pixels).
    point: Point | None = None
    box: Box | None = None
    raw_output: str = ""
    # Not found because the policy says the target is not in the image (True), or
    # because its answer could not be read as a location (False): an evaluation
    # scores a refusal only by the first.
    absent: bool = False


@dataclass(frozen=True)
class Pinning:
    """What a policy's answers depend on besides the image and the description
    (agent.proto's PolicyPinning): runs that record it can tell whether two of them
    asked the same way. Empty strings: the policy has no such part."""

    policy: str
    model: str = ""
    engine: str = ""
    dialect: str = ""
    # "sha256:<hex>" of what shapes the question and reads the answer.
    prompt_hash: str = ""
    resize_rule: str = ""
    coordinates: str = ""
    # How a Locate call samples (None: the policy does not sample).
    sampling: SamplingParams | None = None
    policy_version: int = 0
    policy_version_label: str = ""


@runtime_checkable
class Pinned(Protocol):
    """A policy that can say what its answers depend on (not every policy can: an
    attached desktop answers nothing itself)."""

    def pinning(self) -> Pinning: ...


@runtime_checkable
class Policy(Protocol):
    name: str
    description: str

    @property
    def ready(self) -> bool:
        """True once start() returned; the daemon reports SERVING only then."""
        ...

    @property
    def history_frames(self) -> int:
        """How many recent frames a session keeps for this policy."""
        ...

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        """How clients should send frames; `accepted` is what the client can encode
        (empty: PNG and JPEG), `screen` the physical size of the display it will
        capture, when known. max_bytes is filled in by the daemon."""
        ...

    async def start(self) -> None: ...

    async def decide(self, context: StepContext) -> Decision: ...

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]: ...

    async def abort(self, session_id: str) -> None:
        """Stop any work for this session (cancelled, disconnected or ended)."""
        ...

    async def close(self) -> None: ...
