"""Sessions and the registry that owns them.

A `Session` is the daemon's state for one RunSession stream: a small state
machine (waiting for the client / thinking / paused / ended), the step counter
and limit, the last K frames kept encoded, the action ids whose results are
expected next, and the record of what the client executed. The registry
finds sessions by id for the ControlService; a session leaves it when its
stream ends, whatever the reason.
"""

from __future__ import annotations

import asyncio
import enum
import secrets
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from holodesk.daemon.actions import (
    Action,
    ActionResult,
    HistoryStep,
    ends_session,
    has_coordinates,
)
from holodesk.daemon.actions import Done as DoneKind
from holodesk.daemon.actions import Fail as FailKind
from holodesk.daemon.errors import FailedPrecondition, InvalidArgument, NotFound
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Rect, Size
from holodesk.daemon.policies.base import Decision, StepContext


class SessionState(enum.Enum):
    WAITING_FOR_CLIENT = "waiting_for_client"
    THINKING = "thinking"
    PAUSED = "paused"
    ENDED = "ended"


class SessionOutcome(enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STEP_LIMIT = "step_limit"


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

    def primary_screen(self) -> Size | None:
        """Physical size of the display clients capture by default (the primary)."""
        if not self.displays:
            return None
        display = next((d for d in self.displays if d.primary), self.displays[0])
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
    ) -> None:
        self.session_id = uuid.uuid4().hex
        self.resume_token = secrets.token_urlsafe(24)
        self.request = request
        self.policy_name = policy_name
        self.max_steps = max_steps
        self.started_at = datetime.now(UTC)
        self.step = 0
        self.frames: deque[EncodedFrame] = deque(maxlen=max(1, history_frames))
        self.history: list[HistoryStep] = []
        # Sent to the client, results not yet received.
        self.pending: tuple[Action, ...] = ()
        # Every action the client reported, by id: what resume will replay from.
        self.executed: dict[str, ActionResult] = {}
        self.user_reply = ""
        # Decided (done/fail) but waiting for the results of the step's other actions.
        self.ending: Ending | None = None
        self.ended: Ending | None = None
        self.cancelled = asyncio.Event()
        self.cancel_reason = ""
        # Set while the session is held before a step because it is paused.
        self.held = asyncio.Event()
        self._running = asyncio.Event()
        self._running.set()
        self._thinking = False
        self._frame_ids: set[str] = set()
        self._action_count = 0

    @property
    def task(self) -> str:
        return self.request.task

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def state(self) -> SessionState:
        if self.ended is not None:
            return SessionState.ENDED
        if self.paused:
            return SessionState.PAUSED
        return SessionState.THINKING if self._thinking else SessionState.WAITING_FOR_CLIENT

    def set_thinking(self, thinking: bool) -> None:
        self._thinking = thinking

    # Operator controls -------------------------------------------------------------

    def pause(self) -> None:
        self._require_live("pause")
        self._running.clear()

    def resume(self) -> None:
        self._require_live("resume")
        self._running.set()

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

    # Protocol ----------------------------------------------------------------------

    def accept_results(self, results: tuple[ActionResult, ...], field_name: str) -> None:
        """Results must answer exactly the pending actions (any order, each once)."""
        expected = {a.action_id for a in self.pending}
        seen: set[str] = set()
        for index, result in enumerate(results):
            where = f"{field_name}[{index}].action_id"
            if result.action_id in seen:
                raise InvalidArgument(where, f"action {result.action_id!r} is reported twice")
            if result.action_id not in expected:
                pending = ", ".join(sorted(expected)) or "none"
                raise InvalidArgument(
                    where,
                    f"unknown action id {result.action_id!r}; results expected for: {pending}",
                )
            seen.add(result.action_id)
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
        self.pending = ()

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
        self._frame_ids.add(frame.frame_id)
        self.frames.append(frame)

    def context(self) -> StepContext:
        return StepContext(
            session_id=self.session_id,
            task=self.task,
            step=self.step + 1,
            frames=tuple(self.frames),
            history=tuple(self.history),
            user_reply=self.user_reply,
        )

    def record_decision(self, decision: Decision) -> tuple[tuple[Action, ...], Ending | None]:
        """Count the step; give ids to the actions to send; say whether it ends the session.

        Actions after a done/fail are dropped (the session ends there).
        """
        self.step += 1
        frame = self.frames[-1]
        to_send: list[Action] = []
        ending: Ending | None = None
        for kind in decision.actions:
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
        self.ending = ending if sent else None
        return sent, ending

    def finish(self, ending: Ending) -> Ending:
        self.ended = ending
        self._thinking = False
        self._running.set()
        return ending


@dataclass
class SessionRegistry:
    _sessions: dict[str, Session] = field(default_factory=dict)
    _tokens: dict[str, str] = field(default_factory=dict)
    shutting_down: asyncio.Event = field(default_factory=asyncio.Event)
    _empty: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._empty.set()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(
        self, request: SessionRequest, *, policy_name: str, max_steps: int, history_frames: int
    ) -> Session:
        session = Session(
            request, policy_name=policy_name, max_steps=max_steps, history_frames=history_frames
        )
        self._sessions[session.session_id] = session
        self._tokens[session.resume_token] = session.session_id
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
            raise NotFound("resume token", token[:8] + "..." if len(token) > 8 else token)
        return self.get(session_id)

    def list(self) -> list[Session]:
        return sorted(self._sessions.values(), key=lambda s: s.started_at)

    def pause(self, session_id: str) -> Session:
        session = self.get(session_id)
        session.pause()
        return session

    def resume(self, session_id: str) -> Session:
        session = self.get(session_id)
        session.resume()
        return session

    def cancel(self, session_id: str, reason: str) -> Session:
        session = self.get(session_id)
        session.cancel(reason)
        return session

    def remove(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._tokens.pop(session.resume_token, None)
        if not self._sessions:
            self._empty.set()

    async def wait_empty(self) -> None:
        await self._empty.wait()
