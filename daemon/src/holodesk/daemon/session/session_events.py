"""What a session's watchers hear as it runs (the live view, issue 17).

A `Session` calls its registry's observers synchronously, on the daemon's event
loop, at each point of its run: a frame taken, a step decided, results reported,
its state changed. An observer must return at once and never block or raise:
the live view only copies what it needs into bounded per-viewer queues, so a
slow or vanished browser can neither slow a session nor grow the daemon.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.daemon.actions import Action, ActionResult
from holodesk.daemon.frames import EncodedFrame


@dataclass(frozen=True)
class FrameTaken:
    """The newest screen of the session, as the policy will see it."""

    frame: EncodedFrame


@dataclass(frozen=True)
class StepDecided:
    """The policy decided a step: the actions sent (done/fail are in the ending)."""

    step: int
    thought: str
    note: str
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class ResultsReported:
    """The client's results for the last step's actions."""

    step: int
    results: tuple[ActionResult, ...]


@dataclass(frozen=True)
class StateChanged:
    """Paused, resumed, thinking, waiting, detached, attached or ended: read the
    session's state (and `ended`) for which."""


SessionEvent = FrameTaken | StepDecided | ResultsReported | StateChanged
