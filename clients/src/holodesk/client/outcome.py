"""How a session went: its ending and every step, for printing and for callers.

A step is one decision of the policy on one screen: the batch of actions it sent,
or, last, the done or fail that ended the session with nothing to run here (its
`ending`). A refresh (an empty batch under the last step's number, asking only for
a fresh screen: after a pause or a take-over) is no step. So the steps here are
the daemon's SessionEnded.steps, what `--max-steps` counts, and what recordings and
their reports hold (docs/recording-format.md, "What a step is").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.frames import SentFrame
from holodesk.client.generation import Generation
from holodesk.data.format import is_refresh


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
    # For a last step that ran nothing here, the decision that ended the session (a
    # Done with the answer, a Fail with the reason); None for a step whose actions came.
    ending: a.Done | a.Fail | None = None


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

    @property
    def last_step(self) -> int:
        """The number of the last step logged (0: none yet)."""
        return self._history[-1].step if self._history else 0

    def add(
        self,
        batch: a.ActionBatch,
        results: Sequence[a.ActionResult],
        frame: SentFrame | None,
        ending: a.Done | a.Fail | None = None,
    ) -> None:
        """One step: its batch, what became of it, and the frame it was decided on; a
        refresh is left out (it asked for a screen, the policy decided nothing)."""
        if is_refresh(batch.step, len(batch.actions), self.last_step):
            return
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
            ending=ending,
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


def final_decision(outcome: Outcome, answer: str, reason: str) -> a.Done | a.Fail | None:
    """The done or fail that ended a session whose last step ran nothing here, as the
    daemon's SessionEnded tells it (None for an ending no decision made: a limit, a
    cancel)."""
    if outcome is Outcome.SUCCEEDED:
        return a.Done(action_id="", answer=answer)
    if outcome is Outcome.FAILED:
        return a.Fail(action_id="", reason=reason)
    return None
