"""Sessions and the registry that owns them.

A `Session` is the daemon's state for one agent run: a small state machine
(waiting for the client / thinking / paused / detached / ended), the step
counter and limits, the last K frames kept encoded, the action ids whose
results are expected next, and the record of what the client executed.

A session outlives its stream: when a RunSession stream drops before the
session ended, the session is DETACHED for the resume window, and a new stream
presenting its resume token (same principal) re-attaches to it. The token
rotates on every attach, so each token works once. The registry finds sessions
by id (ControlService) and by token, enforces the concurrency limits, and
expires detached sessions; a session leaves it when it ends, expires, or the
daemon stops, and every listener (the recorder's hook, issue 7) hears of it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import secrets
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
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
    RETRY_WHEN_FULL_S,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.generation import SessionSampling
from holodesk.daemon.geometry import Rect, Size
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.frame_memory import FrameMemory, unique_bytes
from holodesk.daemon.session.session_events import (
    ActionsMade,
    FrameTaken,
    ObservationRead,
    ResultsReported,
    SessionEvent,
    StateChanged,
    StepDecided,
)
from holodesk.daemon.steps import StepContext
from holodesk.proto.limits import MAX_ACTIONS

# Hears every event of every session (SessionRegistry.observers; the live view).
SessionObserver = Callable[["Session", SessionEvent], None]

log = logging.getLogger(__name__)


class SessionState(enum.Enum):
    WAITING_FOR_CLIENT = "waiting_for_client"
    THINKING = "thinking"
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
class ClientInfo:
    os: str = ""
    os_version: str = ""
    hostname: str = ""
    client_version: str = ""
    backend: str = ""


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
    client: ClientInfo = ClientInfo()
    displays: tuple[Display, ...] = ()
    encodings: tuple[ImageEncoding, ...] = ()
    max_steps: int = 0
    resume_token: str = ""
    policy: str = ""
    # SessionStart.sampling; None: the policy's defaults.
    sampling: SessionSampling | None = None

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
        # The registry's observers (the live view): shared, so later ones hear too.
        self._observers = observers if observers is not None else []
        # Decided (done/fail) but waiting for the results of the step's other actions.
        self.ending: Ending | None = None
        self.ended: Ending | None = None
        self.cancelled = asyncio.Event()
        self.cancel_reason = ""
        # Set while the session is held before a step because it is paused.
        self.held = asyncio.Event()
        self.attached = True
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
        return SessionState.THINKING if self._thinking else SessionState.WAITING_FOR_CLIENT

    def set_thinking(self, thinking: bool) -> None:
        self._thinking = thinking
        self._notify(StateChanged())

    def publish(self, event: ActionsMade | ObservationRead) -> None:
        """Tell the session's observers what the runner made of a step or read from
        the client: the same stream as the session's own events."""
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

    def pause(self) -> None:
        self._require_live("pause")
        self._running.clear()
        self._notify(StateChanged())

    def resume(self, note: str = "") -> None:
        """Run again; `note` (handing back after a take-over) goes into the next prompt."""
        self._require_live("resume")
        if note:
            self.operator_note = note
        self._running.set()
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

    def accept_frame(self, frame: EncodedFrame, field_name: str) -> None:
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
        self._notify(FrameTaken(frame))

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
        self._notify(StepDecided(self.step, decision.thought, decision.note, sent))
        return sent, ending

    def finish(self, ending: Ending) -> Ending:
        self.ended = ending
        self._thinking = False
        self._running.set()
        self._notify(StateChanged())
        return ending


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = 1024
    # 0: none beyond max_sessions.
    max_per_principal: int = 0
    # From a session's start, detached time included (0: none).
    max_session_s: float = 0.0
    # How long a detached session waits for a resume (0: it is dropped at once).
    resume_window_s: float = 60.0


SessionListener = Callable[[Session], None]


class SessionRegistry:
    def __init__(
        self, limits: SessionLimits | None = None, frame_memory: FrameMemory | None = None
    ) -> None:
        self.limits = limits if limits is not None else SessionLimits()
        self.frame_memory = frame_memory if frame_memory is not None else FrameMemory()
        self._sessions: dict[str, Session] = {}
        self._tokens: dict[str, str] = {}
        self._per_principal: dict[str, int] = {}
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        self.shutting_down = asyncio.Event()
        self._empty = asyncio.Event()
        self._empty.set()
        # Called with each session as it leaves the registry, ended (ended, expired,
        # dropped at shutdown). The recorder (issue 7) flushes a recording here.
        self.listeners: list[SessionListener] = []
        # Called with every session's events as they happen (session_events.py): the
        # live view. Each must return at once (it runs on the event loop).
        self.observers: list[SessionObserver] = []

    def __len__(self) -> int:
        return len(self._sessions)

    def create(
        self,
        request: SessionRequest,
        *,
        policy_name: str,
        max_steps: int,
        history_frames: int,
        principal: str = "anonymous",
    ) -> Session:
        limits = self.limits
        if len(self._sessions) >= limits.max_sessions:
            raise ResourceExhausted(
                "sessions",
                f"the daemon runs its maximum of {limits.max_sessions} concurrent sessions "
                "(detached ones awaiting a resume included)",
                retry_after_s=RETRY_WHEN_FULL_S,
            )
        mine = self._per_principal.get(principal, 0)
        if limits.max_per_principal and mine >= limits.max_per_principal:
            raise ResourceExhausted(
                f"sessions of {principal}",
                f"{principal} runs its maximum of {limits.max_per_principal} concurrent sessions",
                retry_after_s=RETRY_WHEN_FULL_S,
            )
        self.frame_memory.check_room()
        deadline = time.monotonic() + limits.max_session_s if limits.max_session_s else None
        session = Session(
            request,
            policy_name=policy_name,
            max_steps=max_steps,
            history_frames=history_frames,
            principal=principal,
            deadline=deadline,
            memory=self.frame_memory,
            observers=self.observers,
        )
        self._sessions[session.session_id] = session
        self._tokens[session.resume_token] = session.session_id
        self._per_principal[principal] = mine + 1
        self._empty.clear()
        return session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFound("session", session_id)
        return session

    def by_resume_token(self, token: str) -> Session:
        session_id = self._tokens.get(token)
        if session_id is None:
            raise NotFound(
                "resume token",
                _masked(token),
                "unknown or expired (each token works once, within the resume window)",
            )
        return self.get(session_id)

    def list(self) -> list[Session]:
        return sorted(self._sessions.values(), key=lambda s: s.started_at)

    # Detach and resume ---------------------------------------------------------------

    def detach(self, session: Session) -> bool:
        """Keep a session whose stream dropped for the resume window; False if it
        cannot wait (resume disabled, daemon stopping, session over): remove it then."""
        window = self.limits.resume_window_s
        if window <= 0 or self.shutting_down.is_set() or session.ended is not None:
            return False
        if session.session_id not in self._sessions:
            return False
        session.detach()
        left = session.seconds_left()
        delay = window if left is None else max(0.0, min(window, left))
        loop = asyncio.get_running_loop()
        self._expiry[session.session_id] = loop.call_later(delay, self._expire, session.session_id)
        return True

    def reattach(self, token: str, principal: str) -> Session:
        """The detached session this token resumes, attached, with a fresh token."""
        session = self.by_resume_token(token)
        if session.principal != principal:
            raise PermissionDenied(
                "the resume token belongs to a session of another principal",
                principal=principal,
            )
        if session.attached:
            raise FailedPrecondition(
                f"session {session.session_id}",
                "session is attached to another stream (retry once the daemon has seen "
                "that stream drop)",
                kind="ATTACHED",
            )
        handle = self._expiry.pop(session.session_id, None)
        if handle is not None:
            handle.cancel()
        # Rotate: the presented token is dead from now on.
        del self._tokens[token]
        fresh = secrets.token_urlsafe(24)
        self._tokens[fresh] = session.session_id
        session.attach(fresh)
        return session

    def _expire(self, session_id: str) -> None:
        self._expiry.pop(session_id, None)
        session = self._sessions.get(session_id)
        if session is None or session.attached or session.ended is not None:
            return
        left = session.seconds_left()
        if left is not None and left <= 0:
            ending = Ending(
                SessionOutcome.TIME_LIMIT,
                reason=f"time limit: reached {self.limits.max_session_s:g} s while detached",
            )
        else:
            window = self.limits.resume_window_s
            ending = Ending(SessionOutcome.CANCELLED, reason=f"not resumed within {window:g} s")
        session.finish(ending)
        log.info("session %s expired: %s", session_id, ending.reason)
        self.remove(session_id)

    # Operator controls -----------------------------------------------------------------

    def pause(self, session_id: str) -> Session:
        session = self.get(session_id)
        session.pause()
        return session

    def resume(self, session_id: str, note: str = "") -> Session:
        session = self.get(session_id)
        session.resume(note)
        return session

    def cancel(self, session_id: str, reason: str) -> Session:
        session = self.get(session_id)
        session.cancel(reason)
        if not session.attached:  # no stream will notice: end it here
            session.finish(Ending(SessionOutcome.CANCELLED, reason=reason))
            self.remove(session_id)
        return session

    # Leaving ---------------------------------------------------------------------------

    def remove(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.release_frames()
            self._tokens.pop(session.resume_token, None)
            handle = self._expiry.pop(session_id, None)
            if handle is not None:
                handle.cancel()
            left = self._per_principal.get(session.principal, 1) - 1
            if left > 0:
                self._per_principal[session.principal] = left
            else:
                self._per_principal.pop(session.principal, None)
            for listener in self.listeners:
                try:
                    listener(session)
                except Exception:
                    log.exception("session listener failed for %s", session_id)
        if not self._sessions:
            self._empty.set()

    def drop_detached(self, reason: str) -> int:
        """End every detached session now (the daemon stops: nobody can resume them)."""
        detached = [s for s in self._sessions.values() if not s.attached]
        for session in detached:
            if session.ended is None:
                session.finish(Ending(SessionOutcome.CANCELLED, reason=reason))
            self.remove(session.session_id)
        return len(detached)

    def close(self, reason: str) -> None:
        """End and remove whatever is left (after the server stopped)."""
        for session in list(self._sessions.values()):
            if session.ended is None:
                session.finish(Ending(SessionOutcome.CANCELLED, reason=reason))
            self.remove(session.session_id)

    async def wait_empty(self) -> None:
        await self._empty.wait()


def _masked(token: str) -> str:
    return token[:4] + "..." if len(token) > 8 else "(short)"
