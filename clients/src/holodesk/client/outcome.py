"""How a session went: its ending and every step, for printing and for callers."""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.frames import SentFrame
from holodesk.client.generation import Generation


@dataclass(frozen=True)
class StepRecord:
    step: int
    actions: tuple[a.Action, ...]
    results: tuple[a.ActionResult, ...]
    thought: str = ""
    # What the model generated (None for policies without a model).
    generation: Generation | None = None
    # The frame this step was decided on, as sent.
    frame: SentFrame | None = None


@dataclass(frozen=True)
class SessionOutcome:
    outcome: Outcome
    answer: str = ""
    reason: str = ""
    steps: int = 0
    history: tuple[StepRecord, ...] = ()
    session_id: str = ""
    # The gRPC status name when the daemon aborted the stream or could not be reached.
    status_code: str = ""
    # The client's own recording of the session (SessionOptions.record_dir), if any.
    recording: str = ""
