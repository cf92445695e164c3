"""How a session went: its ending and every step, for printing and for callers."""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.client import actions as a
from holodesk.client.events import Outcome


@dataclass(frozen=True)
class StepRecord:
    step: int
    actions: tuple[a.Action, ...]
    results: tuple[a.ActionResult, ...]
    thought: str = ""


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
