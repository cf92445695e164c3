"""A session's plain values: what the client asked for (SessionRequest, its client and
displays), the states a session passes through and how it ends (Ending, SessionOutcome).

Apart from the Session that holds them, so the converters, the metrics, the recorder
and the live view can read them without the session's machinery.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from holodesk.daemon.frames import ImageEncoding
from holodesk.daemon.generation import Sampling
from holodesk.daemon.geometry import Rect, Size
from holodesk.data.format import ClientInfo


class SessionState(enum.Enum):
    WAITING_FOR_CLIENT = "waiting_for_client"
    THINKING = "thinking"
    # An attached desktop (policy computer) between steps: no decision is in progress,
    # its next step is whatever a ComputerService caller sends. On the wire it is
    # WAITING_FOR_CLIENT (the contract's state for "waiting on someone outside the
    # daemon"); the live view and the metrics name it as it is.
    WAITING_FOR_CALLER = "waiting_for_caller"
    PAUSED = "paused"
    # The stream dropped; waiting for a resume within the resume window.
    DETACHED = "detached"
    ENDED = "ended"


class SessionOutcome(enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STEP_LIMIT = "step_limit"
    # --max-session-s ran out before the task was done.
    TIME_LIMIT = "time_limit"


@dataclass(frozen=True)
class Display:
    display_id: str
    bounds: Rect
    scale_factor: float = 1.0
    primary: bool = False
    name: str = ""


@dataclass(frozen=True)
class SessionRequest:
    """What the client asked for in SessionStart."""

    task: str
    # What the client says of itself: the recording's own model (data/format.py), so a
    # recording keeps it as the session got it; built once, by convert.client_info_from_pb.
    client: ClientInfo = field(default_factory=ClientInfo)
    displays: tuple[Display, ...] = ()
    encodings: tuple[ImageEncoding, ...] = ()
    max_steps: int = 0
    resume_token: str = ""
    policy: str = ""
    # SessionStart.sampling; None: the policy's defaults.
    sampling: Sampling | None = None

    def primary_screen(self) -> Size | None:
        """Physical size of the display clients capture by default (the primary)."""
        if not self.displays:
            return None
        display = next((d for d in self.displays if d.primary), self.displays[0])
        if display.bounds.width <= 0 or display.bounds.height <= 0:
            return None  # a client that did not say: as if no display was given
        return Size(display.bounds.width, display.bounds.height)


@dataclass(frozen=True)
class Ending:
    outcome: SessionOutcome
    answer: str = ""
    reason: str = ""
