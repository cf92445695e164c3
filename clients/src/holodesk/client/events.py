"""What the daemon tells the client: the session's start and its end."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from holodesk.client.frames import FrameSpec


class Outcome(enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STEP_LIMIT = "step_limit"
    # Client side only: the daemon was unreachable, aborted the stream, or broke the protocol.
    ERROR = "error"


@dataclass(frozen=True)
class Started:
    session_id: str
    resume_token: str
    frame_spec: FrameSpec
    policy: str
    max_steps: int


@dataclass(frozen=True)
class Ended:
    outcome: Outcome
    answer: str = ""
    reason: str = ""
    steps: int = 0
