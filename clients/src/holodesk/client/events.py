"""What the daemon tells the client: the session's start and its end."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from holodesk.client.frames import FrameSpec
from holodesk.client.generation import Generation


class Outcome(enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STEP_LIMIT = "step_limit"
    TIME_LIMIT = "time_limit"
    # Client side only: the daemon was unreachable, aborted the stream, or broke the protocol.
    ERROR = "error"


@dataclass(frozen=True)
class Started:
    session_id: str
    resume_token: str
    frame_spec: FrameSpec
    policy: str
    max_steps: int
    # On resume: this stream continues the session; `step` is the last step the daemon
    # sent and `pending_action_ids` the actions of it whose results it never received.
    resumed: bool = False
    step: int = 0
    pending_action_ids: tuple[str, ...] = ()
    # Names the daemon's recording of this session; empty when it is not recorded.
    recording_id: str = ""


@dataclass(frozen=True)
class Ended:
    outcome: Outcome
    answer: str = ""
    reason: str = ""
    steps: int = 0
    # The model's output for a last step that had nothing to execute (done or fail only).
    generation: Generation | None = None


@dataclass(frozen=True)
class LinkLost:
    """The stream died mid-session: the running action completes, nothing more starts."""

    cause: str


@dataclass(frozen=True)
class Reconnecting:
    """The stream dropped mid-session: nothing runs; after `delay_s` the client resumes."""

    attempt: int
    max_attempts: int
    delay_s: float
    cause: str


@dataclass(frozen=True)
class Resumed:
    """A new stream continues the session; `reported` results answered the daemon's pending ids."""

    session_id: str
    step: int
    reported: int


@dataclass(frozen=True)
class SafetyNotice:
    """Something the user should know about a safety feature (e.g. no hotkey available)."""

    message: str


@dataclass(frozen=True)
class Held:
    """An operator holds the session before its next step (`held`), or lets it run
    again. `taken_over`: a person has the desktop (the live view's Take over), not
    only a pause; `note`: handing back, what they wrote for the model's next step.
    The daemon sends these because the client asks (SessionStart.hold_notices), so
    the terminal says why nothing happens instead of sitting silent."""

    held: bool
    taken_over: bool = False
    note: str = ""


Notice = LinkLost | Reconnecting | Resumed | SafetyNotice | Held
