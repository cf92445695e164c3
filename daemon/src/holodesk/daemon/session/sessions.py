"""A session: the daemon's state for one agent run.

A `Session` is a small state machine (waiting for the client / thinking, or for its
caller when it is an attached desktop / paused / detached / ended), the step counter
and limits, the last K frames kept encoded, the
action ids whose results are expected next, and the record of what the client
executed. Everything that happens to it is told to its registry's observers, one
event stream (session_events.py: the live view, the recorder and the metrics listen).

A session outlives its stream: when a RunSession stream drops before the session
ended, the session is DETACHED for the resume window, and a new stream presenting
its resume token (same principal) re-attaches to it (registry.py). The token rotates
on every attach, so each token works once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

from holodesk.daemon.actions import (
    Action,
    ActionResult,
    ActionStatus,
    HistoryStep,
    ends_session,
    has_coordinates,
)
from holodesk.daemon.actions import Done as DoneKind
from holodesk.daemon.actions import Fail as FailKind
from holodesk.daemon.errors import (
    FailedPrecondition,
    InvalidArgument,
)
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.frame_memory import FrameMemory, unique_bytes
from holodesk.daemon.session.session_events import (
    FrameTaken,
    ResultsReported,
    RunnerEvent,
    SessionEvent,
    StateChanged,
    StepDecided,
)
from holodesk.daemon.session.values import (
    Ending,
    SessionOutcome,
    SessionRequest,
    SessionState,
)
from holodesk.daemon.steps import StepContext
from holodesk.proto.limits import MAX_ACTIONS

# Hears every event of every session (SessionRegistry.observers: the live view, the
# recorder, the metrics).
SessionObserver = Callable[["Session", SessionEvent], None]

log = logging.getLogger(__name__)


class Session:
    def __init__(
        self,
        request: SessionRequest,
        *,
        policy_name: str,
        max_steps: int,
        history_frames: int,
        principal: str = "anonymous",
        deadline: float | None = None,
        memory: FrameMemory | None = None,
        observers: list[SessionObserver] | None = None,
        relayed: bool = False,
    ) -> None:
        self.session_id = uuid.uuid4().hex
        self.resume_token = secrets.token_urlsafe(24)
        self.request = request
        self.policy_name = policy_name
        self.max_steps = max_steps
        # Who started it; only the same principal may resume it.
        self.principal = principal
        # time.monotonic() at which --max-session-s runs out; None: no limit.
        self.deadline = deadline
        self.started_at = datetime.now(UTC)
        self.step = 0
        self.frames: deque[EncodedFrame] = deque(maxlen=max(1, history_frames))
        # The daemon's budget for all sessions' frames, and what this one holds of it.
        self._memory = memory if memory is not None else FrameMemory()
        self._held_bytes = 0
        self.history: list[HistoryStep] = []
        # Sent to the client, results not yet received.
        self.pending: tuple[Action, ...] = ()
        # Every result the client reported, by action id; kept across resumes.
        self.executed: dict[str, ActionResult] = {}
        self.user_reply = ""
        # Set by a resume that hands the desktop back after a take-over; goes into the
        # next step's prompt (StepContext.operator_note), then is cleared.
        self.operator_note = ""
        # The registry's observers (session_events.py): shared, so later ones hear too.
        self._observers = observers if observers is not None else []
        # Decided (done/fail) but waiting for the results of the step's other actions.
        self.ending: Ending | None = None
        self.ended: Ending | None = None
        self.cancelled = asyncio.Event()
        self.cancel_reason = ""
        # Set while the session is held before a step because it is paused.
        self.held = asyncio.Event()
        # Paused by a person who took the desktop over (the live view), not only paused.
        self.taken_over = False
        # Set by every pause and resume: a hold in progress tells its client again.
        self.hold_changed = asyncio.Event()
        self.attached = True
        # Its steps come from ComputerService callers (an attached desktop: its policy
        # is the computer policy): the policy only relays them, so while a step is
        # "decided" it waits for a caller (it never thinks), and a step without
        # actions only asks its client for a fresh frame (not a step: session_runner).
        # Known from its creation, so even its first step never shows THINKING.
        self.relayed = relayed
        self.resumes = 0
        # Set by the recorder when the session is recorded (SessionStarted.recording_id).
        self.recording_id = ""
        self._running = asyncio.Event()
        self._running.set()
        self._thinking = False
        self._frame_ids: set[str] = set()
        self._sent_ids: set[str] = set()
        self._action_count = 0
        # The newest frame was taken for a step not decided yet.
        self._undecided_frame = False
        # The next observation is the first after a resume (NOT_DELIVERED allowed).
        self._resuming = False
        # The newest frame is stale (taken before a hold): the next one replaces it.
        self._replace_newest = False

    @property
    def task(self) -> str:
        return self.request.task

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def pending_ids(self) -> tuple[str, ...]:
        return tuple(a.action_id for a in self.pending)

    @property
    def state(self) -> SessionState:
        if self.ended is not None:
            return SessionState.ENDED
        if not self.attached:
            return SessionState.DETACHED
        if self.paused:
            return SessionState.PAUSED
        if not self._thinking:
            return SessionState.WAITING_FOR_CLIENT
        return SessionState.WAITING_FOR_CALLER if self.relayed else SessionState.THINKING

    def set_thinking(self, thinking: bool) -> None:
        self._thinking = thinking
        self._notify(StateChanged())

    def publish(self, event: RunnerEvent) -> None:
        """Tell the session's observers what the runner did with a stream, made of a
        step or read from the client: the same stream as the session's own events."""
        self._notify(event)

    def _notify(self, event: SessionEvent) -> None:
        for observer in self._observers:
            try:
                observer(self, event)
            except Exception:  # a watcher's bug must not break the session it watches
                log.exception("session observer failed for %s", self.session_id)

    def seconds_left(self) -> float | None:
        """Until --max-session-s runs out; None without a limit."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    # Operator controls -------------------------------------------------------------

    def pause(self, *, taken_over: bool = False) -> None:
        """Hold before the next step; `taken_over`: a person has the desktop meanwhile."""
        self._require_live("pause")
        self.taken_over = self.taken_over or taken_over
        self._running.clear()
        self.hold_changed.set()
        self._notify(StateChanged())

    def resume(self, note: str = "") -> None:
        """Run again; `note` (handing back after a take-over) goes into the next prompt."""
        self._require_live("resume")
        if note:
            self.operator_note = note
        self.taken_over = False
        self._running.set()
        self.hold_changed.set()
        self._notify(StateChanged())

    def cancel(self, reason: str) -> None:
        self._require_live("cancel")
        if not self.cancelled.is_set():
            self.cancel_reason = reason
            self.cancelled.set()

    async def wait_running(self) -> None:
        await self._running.wait()

    def _require_live(self, verb: str) -> None:
        if self.ended is not None:
            raise FailedPrecondition(
                f"session {self.session_id}", f"cannot {verb}: the session has ended"
            )

    # Streams -----------------------------------------------------------------------

    def detach(self) -> None:
        """Its stream dropped: keep the state, forget the step in progress.

        A frame taken for a step that was never decided leaves the window: the
        resume brings a fresh one, and the history window keeps one frame per step.
        """
        self.discard_undecided_frame()
        self.attached = False
        self._thinking = False
        self.held.clear()
        self._notify(StateChanged())

    def discard_undecided_frame(self) -> None:
        """Forget the newest frame if no step was decided on it (it is stale)."""
        self._replace_newest = False
        if self._undecided_frame:
            self.frames.pop()
            self._undecided_frame = False
            self._hold(unique_bytes(self.frames))

    def replace_newest_frame(self) -> None:
        """The newest frame predates a hold (a take-over): the next frame takes its place
        in the window. It stays until then, as the base a delta frame may be painted on."""
        self._replace_newest = self._undecided_frame

    def attach(self, resume_token: str) -> None:
        self.resume_token = resume_token
        self.attached = True
        self.resumes += 1
        self._resuming = True
        self._notify(StateChanged())

    # Protocol ----------------------------------------------------------------------

    def accept_results(self, results: tuple[ActionResult, ...], field_name: str) -> None:
        """Results must answer exactly the pending actions (any order, each once).

        NOT_DELIVERED is allowed only in the first observation after a resume; if
        any action of a batch that ended with done/fail did not run (not OK) there,
        that ending is dropped and the next step is decided from the fresh frame.
        """
        expected = {a.action_id for a in self.pending}
        seen: set[str] = set()
        for index, result in enumerate(results):
            where = f"{field_name}[{index}]"
            action_id = result.action_id
            if action_id in seen:
                raise InvalidArgument(
                    f"{where}.action_id", f"action {action_id!r} is reported twice"
                )
            if action_id not in expected:
                pending = ", ".join(sorted(expected)) or "none"
                if action_id in self.executed:
                    problem = "already reported in an earlier observation"
                elif action_id in self._sent_ids:
                    problem = "not awaiting a result"
                else:
                    problem = "never sent in this session"
                raise InvalidArgument(
                    f"{where}.action_id",
                    f"unknown action id {action_id!r} ({problem}); results expected for: {pending}",
                )
            if result.status is ActionStatus.NOT_DELIVERED and not self._resuming:
                raise InvalidArgument(
                    f"{where}.status",
                    "NOT_DELIVERED is only valid in the first observation after a resume",
                )
            seen.add(action_id)
        missing = [a.action_id for a in self.pending if a.action_id not in seen]
        if missing:
            raise InvalidArgument(field_name, f"missing results for action(s) {', '.join(missing)}")
        for result in results:
            self.executed[result.action_id] = result
        if self.pending and self.history:
            last = self.history[-1]
            order = {a.action_id: i for i, a in enumerate(last.actions)}
            ordered = tuple(sorted(results, key=lambda r: order.get(r.action_id, 0)))
            self.history[-1] = HistoryStep(
                step=last.step,
                actions=last.actions,
                thought=last.thought,
                note=last.note,
                results=ordered,
                frame_size=last.frame_size,
            )
        if self._resuming and any(r.status is not ActionStatus.OK for r in results):
            self.ending = None
        self._resuming = False
        self.pending = ()
        if results:
            self._notify(ResultsReported(self.step, tuple(results)))

    def accept_frame(
        self, frame: EncodedFrame, field_name: str, *, wire_bytes: int | None = None
    ) -> None:
        """Take the newest screen into the window. `wire_bytes`: what it took on the
        wire, for the observers (default: its own bytes; a delta's were fewer)."""
        if frame.frame_id in self._frame_ids:
            raise InvalidArgument(
                f"{field_name}.frame_id", f"frame id {frame.frame_id!r} was already used"
            )
        if self.request.displays and frame.display_id:
            known = {d.display_id for d in self.request.displays}
            if frame.display_id not in known:
                raise InvalidArgument(
                    f"{field_name}.display_id",
                    f"unknown display {frame.display_id!r}; the session has {sorted(known)}",
                )
        window = [*self.frames, frame]
        if self._replace_newest:
            del window[-2]
        # ResourceExhausted (nothing changed) when the daemon's frame budget is spent.
        self._hold(unique_bytes(window[-(self.frames.maxlen or len(window)) :]))
        self._frame_ids.add(frame.frame_id)
        if self._replace_newest:
            self.frames.pop()
            self._replace_newest = False
        self.frames.append(frame)
        self._undecided_frame = True
        self._notify(FrameTaken(frame, len(frame.data) if wire_bytes is None else wire_bytes))

    def release_frames(self) -> None:
        """Give the frame budget back (the session left the daemon)."""
        self._hold(0)

    def _hold(self, held: int) -> None:
        self._memory.change(held - self._held_bytes, f"frame of session {self.session_id}")
        self._held_bytes = held

    def context(self, decoded: DecodedScreens | None = None) -> StepContext:
        return StepContext(
            session_id=self.session_id,
            task=self.task,
            step=self.step + 1,
            frames=tuple(self.frames),
            history=tuple(self.history),
            user_reply=self.user_reply,
            operator_note=self.operator_note,
            sampling=self.request.sampling,
            client_os=self.request.client.os,
            decoded=decoded,
        )

    def record_decision(self, decision: Decision) -> tuple[tuple[Action, ...], Ending | None]:
        """Count the step; give ids to the actions to send; say whether it ends the session.

        Actions after a done/fail are dropped (the session ends there), and so are
        those past the contract's MAX_ACTIONS per batch: the client could not report
        their results in one Observation; the policy decides again from the next frame.
        """
        self.step += 1
        self._undecided_frame = False
        frame = self.frames[-1]
        to_send: list[Action] = []
        ending: Ending | None = None
        kinds = decision.actions
        if len(kinds) > MAX_ACTIONS and not any(ends_session(k) for k in kinds[:MAX_ACTIONS]):
            log.warning(
                "session %s: the policy decided %d actions; sending the first %d (the "
                "contract's limit per batch)",
                self.session_id,
                len(kinds),
                MAX_ACTIONS,
            )
            kinds = kinds[:MAX_ACTIONS]
        for kind in kinds:
            if ends_session(kind):
                if isinstance(kind, DoneKind):
                    ending = Ending(SessionOutcome.SUCCEEDED, answer=kind.answer)
                elif isinstance(kind, FailKind):
                    ending = Ending(SessionOutcome.FAILED, reason=kind.reason)
                break
            self._action_count += 1
            to_send.append(
                Action(
                    action_id=f"{self.session_id}-{self._action_count}",
                    frame_id=frame.frame_id if has_coordinates(kind) else "",
                    kind=kind,
                )
            )
        sent = tuple(to_send)
        self._sent_ids.update(a.action_id for a in sent)
        self.history.append(
            HistoryStep(
                step=self.step,
                actions=sent,
                thought=decision.thought,
                note=decision.note,
                frame_size=frame.size,
            )
        )
        self.pending = sent
        self.user_reply = ""
        self.operator_note = ""
        self.ending = ending if sent else None
        self._notify(
            StepDecided(self.step, decision.thought, decision.note, sent, decision.generation)
        )
        return sent, ending

    def finish(self, ending: Ending) -> Ending:
        self.ended = ending
        self._thinking = False
        self._running.set()
        self._notify(StateChanged())
        return ending
