"""The registry that owns the daemon's sessions.

It finds sessions by id (ControlService) and by resume token, enforces the
concurrency limits (all sessions, per principal, the frame budget), and expires
detached sessions after the resume window; a session leaves it when it ends,
expires, or the daemon stops, and every listener (the recorder's hook, issue 7;
the metrics; the live view) hears of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from holodesk.daemon.errors import (
    RETRY_WHEN_FULL_S,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from holodesk.daemon.session.frame_memory import FrameMemory
from holodesk.daemon.session.sessions import Session, SessionObserver
from holodesk.daemon.session.update_pauses import UpdatePauses
from holodesk.daemon.session.values import (
    Ending,
    SessionOutcome,
    SessionRequest,
)

log = logging.getLogger(__name__)


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
        # Weight updates under way or done (TrainerService): not counted by step timeouts.
        self.update_pauses = UpdatePauses()
        self._empty = asyncio.Event()
        self._empty.set()
        # One-shot calls (Locate) being answered: a graceful stop waits for them too.
        self._calls = 0
        self._no_calls = asyncio.Event()
        self._no_calls.set()
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
        relayed: bool = False,
    ) -> Session:
        """A new session within the limits; `relayed`: its steps come from ComputerService
        callers (Session.relayed)."""
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
            relayed=relayed,
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

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """A one-shot call (Locate) in flight: wait_empty() waits for it as for a session,
        so a stop lets it finish within the grace instead of cutting it off (the client
        would get CANCELLED and take it for an answer about its input)."""
        self._calls += 1
        self._no_calls.clear()
        try:
            yield
        finally:
            self._calls -= 1
            if self._calls == 0:
                self._no_calls.set()

    async def wait_empty(self) -> None:
        """Until no session is left and no one-shot call is being answered."""
        await self._empty.wait()
        await self._no_calls.wait()


def _masked(token: str) -> str:
    return token[:4] + "..." if len(token) > 8 else "(short)"
