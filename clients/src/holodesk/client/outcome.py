"""How a session went: its ending and every step, for printing and for callers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

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


class StepLog:
    """A session's steps as they run: each handed to `on_step` as it comes (the run
    command's printer, the JSON event stream, the tray), all of them in the outcome."""

    def __init__(
        self, *, keep_frames: bool = False, on_step: Callable[[StepRecord], None] | None = None
    ) -> None:
        self._keep_frames = keep_frames
        self._on_step = on_step
        self._history: list[StepRecord] = []

    def add(
        self, batch: a.ActionBatch, results: Sequence[a.ActionResult], frame: SentFrame | None
    ) -> None:
        """One step: its batch, what became of it, and the frame it was decided on."""
        if frame is not None and not self._keep_frames:
            # Only the coordinate frame: a long session would hold every screenshot.
            frame = replace(frame, data=b"", patches=())
        record = StepRecord(
            batch.step,
            batch.actions,
            tuple(results),
            batch.thought,
            generation=batch.generation,
            frame=frame,
        )
        self._history.append(record)
        if self._on_step is not None:
            self._on_step(record)

    def outcome(
        self,
        outcome: Outcome,
        answer: str = "",
        reason: str = "",
        steps: int = 0,
        status_code: str = "",
        session_id: str = "",
    ) -> SessionOutcome:
        """The session's ending with every step so far (`steps` 0: as many as ran)."""
        return SessionOutcome(
            outcome=outcome,
            answer=answer,
            reason=reason,
            steps=steps or len(self._history),
            history=tuple(self._history),
            session_id=session_id,
            status_code=status_code,
        )
