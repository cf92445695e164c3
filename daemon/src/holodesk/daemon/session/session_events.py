"""What a session's watchers hear as it runs: the one event stream of a session.

A `Session` calls its registry's observers synchronously, on the daemon's event
loop, at each point of its run: a frame taken, a step decided, results reported,
its state changed (the session's own events), and the contract messages the runner
made of a step or read from the client (`Session.publish`: StreamOpened,
ActionsMade, ObservationRead). Three observers listen: the live view (web/hub.py),
the recorder (recorder.py) and the metrics (metrics.py), so the runner never asks
whether a session is recorded and never counts anything itself. An observer
must return at once and never block or raise: the live view only copies what it
needs into bounded per-viewer queues and the recorder queues its writes, so a slow
browser or disk can neither slow a session nor grow the daemon.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.daemon.actions import Action, ActionResult
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.policies.base import Decision
from holodesk.proto.v1 import action_pb2, agent_pb2


@dataclass(frozen=True)
class StreamOpened:
    """A RunSession stream took the session: a new one, or a detached one resumed."""

    resumed: bool


@dataclass(frozen=True)
class FrameTaken:
    """The newest screen of the session, as the policy will see it. `wire_bytes`: what
    it took on the wire (a delta frame's patches, not the screen rebuilt from them)."""

    frame: EncodedFrame
    wire_bytes: int


@dataclass(frozen=True)
class StepDecided:
    """The policy decided a step: the actions sent (done/fail are in the ending), and
    what the model generated (None for a policy without a model): which policy
    version made the step, for the live view."""

    step: int
    thought: str
    note: str
    actions: tuple[Action, ...]
    generation: StepGeneration | None = None


@dataclass(frozen=True)
class ResultsReported:
    """The client's results for the last step's actions."""

    step: int
    results: tuple[ActionResult, ...]


@dataclass(frozen=True)
class StateChanged:
    """Paused, resumed, thinking, waiting, detached, attached or ended: read the
    session's state (and `ended`) for which."""


@dataclass(frozen=True)
class ActionsMade:
    """The runner made a step's Actions message from the decision. `sent` is False
    for one that never goes out (a done or fail with no actions, a step that broke
    the contract): recorded for its generation all the same."""

    message: agent_pb2.Actions
    decision: Decision
    # The window the policy decided from, oldest first.
    frames: tuple[EncodedFrame, ...]
    policy_seconds: float
    sent: bool
    # From the observation's arrival to this message: what the client waits for.
    step_seconds: float


@dataclass(frozen=True)
class ObservationRead:
    """An observation's results and reply as the client sent them, once accepted
    (not the one answering a refresh after a hold: it answers no step)."""

    results: tuple[action_pb2.ActionResult, ...]
    user_reply: str


# What the runner tells through `Session.publish` (the others are the Session's own).
RunnerEvent = StreamOpened | ActionsMade | ObservationRead

SessionEvent = (
    StreamOpened
    | FrameTaken
    | StepDecided
    | ResultsReported
    | StateChanged
    | ActionsMade
    | ObservationRead
)
