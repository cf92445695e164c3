"""Runs one RunSession stream: the protocol of agent.proto, step by step.

    client: start           server: started (session id, resume token, frame spec)
    client: observation     server: actions (step 1)
    client: observation     server: actions (step 2)   <- results of step 1 inside
    ...                     server: ended (answer, failure, cancel, step/time limit)

A reader task drains the client's stream into a queue, so a client `cancel`
is seen even while the policy thinks; an operator's cancel (ControlService)
arrives through the session's `cancelled` event.

How a stream ends decides its session's fate:

- the session ended (answer, failure, cancel, step or time limit, a stuck
  policy past --step-timeout-s, a client silent past --first-observation-timeout-s
  before its first observation or --idle-timeout-s after a step): it leaves the
  registry (a stream with no SessionStart in time is closed DEADLINE_EXCEEDED);
- a protocol error, or the daemon stopping: the session is dropped with it;
- the stream dropped (client gone, connection lost, RPC cancelled or past its
  deadline): the policy's work in flight is aborted and the session is
  DETACHED for the resume window (--resume-window-s; 0 drops it instead).

Resume: a SessionStart carrying the session's resume token (same principal)
re-attaches it. SessionStarted then says resumed, the last step sent, and the
ids of that step's actions whose results never arrived; the next observation
answers exactly those ids (NOT_DELIVERED for what never ran) with a fresh
frame, and the policy decides a NEW step from it. A batch is never re-sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from holodesk.daemon import convert, logs
from holodesk.daemon.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    HolodeskError,
    InvalidArgument,
    Unavailable,
)
from holodesk.daemon.frames import FrameLimits, FrameSpec, check_fits, validate_frame
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.metrics import DaemonMetrics
from holodesk.daemon.policies.base import Decision, Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.principals import ANONYMOUS, Principal
from holodesk.daemon.session import frame_deltas
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.frame_memory import FrameMemoryFull
from holodesk.daemon.session.recorder import Recorder
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_events import ActionsMade, ObservationRead
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import Ending, SessionOutcome
from holodesk.proto.limits import REASON_CHARS, clip
from holodesk.proto.v1 import agent_pb2

log = logging.getLogger(__name__)
T = TypeVar("T")
# Cleanups scheduled from RPC done-callbacks, referenced until they finish.
_BACKGROUND: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class SessionSettings:
    frame_limits: FrameLimits
    # Default and ceiling for a session's steps.
    max_steps: int
    # How long the policy may take for one step; 0: no limit.
    step_timeout_s: float = 0.0
    # How long the client may take for its SessionStart, and then for its first
    # observation (after a start or a resume); 0: no limit.
    first_observation_timeout_s: float = 0.0
    # How long the client may take for each later observation; 0: no limit.
    idle_timeout_s: float = 0.0
    # Log each task's text in full at INFO (--log-task); otherwise only its length,
    # since a task may hold what its user would not want in a log.
    log_task: bool = False
    # The server's instruments (a private, unexported set when none is given).
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics, compare=False, repr=False)
    # Session recordings (issue 7): opened here, then fed by the session's events
    # (the recorder is one of the registry's observers); None: nothing is recorded.
    recorder: Recorder | None = field(default=None, compare=False, repr=False)
    # Offer clients delta frames (FrameSpec.accept_deltas; see frame_deltas.py).
    accept_deltas: bool = True
    # Screens rebuilt lately, shared by all sessions (None: every delta decodes its base).
    decoded_screens: DecodedScreens | None = field(default=None, compare=False, repr=False)


class _EndOfStream:
    """The client half-closed its stream."""


class _Interrupted(Exception):  # noqa: N818
    """The session ends here. `after_send`: finish it only once the client got the news
    (a half-close may really be a drop, which must detach instead)."""

    def __init__(self, ending: Ending, *, after_send: bool = False) -> None:
        super().__init__(ending.reason)
        self.ending = ending
        self.after_send = after_send


class _StreamLost(Exception):  # noqa: N818
    """The client's stream broke (not a protocol error): the session detaches."""


_EOF = _EndOfStream()


class SessionRunner:
    def __init__(
        self,
        requests: AsyncIterator[agent_pb2.RunSessionRequest],
        context: Any,
        *,
        registry: SessionRegistry,
        catalog: PolicyCatalog,
        settings: SessionSettings,
        principal: Principal = ANONYMOUS,
    ) -> None:
        self._requests = requests
        self._context = context
        self._registry = registry
        self._catalog = catalog
        self._settings = settings
        self._principal = principal
        self._queue: asyncio.Queue[agent_pb2.RunSessionRequest | _EndOfStream | BaseException] = (
            asyncio.Queue()
        )
        self._session: Session | None = None
        self._policy: Policy | None = None
        self._reader: asyncio.Task[None] | None = None
        self._cleaned = False
        self._aborted = False
        # The stream ended by the daemon's decision (protocol error, shutdown): no detach.
        self._fatal = False
        # No observation has arrived on this stream yet (the first-observation limit).
        self._first_observation = True
        # What this stream's frames were asked to look like (set when it starts).
        self._frame_spec = FrameSpec()

    async def run(self) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        opening = self._settings.first_observation_timeout_s or None
        try:
            first = await asyncio.wait_for(anext(self._requests), opening)
        except StopAsyncIteration:
            return  # the client left before starting: nothing to clean up
        except TimeoutError:
            # A stream that never starts holds no slot, but it holds a call: close it.
            raise DeadlineExceeded(f"no SessionStart within {opening:g} s of opening") from None
        start = self._check_start(first)
        session, policy, resumed = self._open(start)
        # Every record this RPC's task (and the tasks it starts) logs names the session.
        logs.bind(session_id=session.session_id)
        self._settings.metrics.session_opened(resumed=resumed)
        self._context.add_done_callback(lambda _: self._cleanup_soon())
        try:
            self._reader = asyncio.create_task(self._read(), name=f"read-{session.session_id}")
            spec = replace(
                policy.frame_spec(session.request.encodings, session.request.primary_screen()),
                max_bytes=self._settings.frame_limits.max_bytes,
                accept_deltas=self._settings.accept_deltas,
            )
            self._frame_spec = spec
            if resumed:
                log.info(
                    "session %s resumed by %s after step %d (%d action(s) pending)",
                    session.session_id,
                    self._principal.name,
                    session.step,
                    len(session.pending),
                )
            else:
                log.info(
                    "session %s started by %s: %s (%s)",
                    session.session_id,
                    self._principal.name,
                    logs.task_text(session.task, full=self._settings.log_task),
                    policy.name,
                    extra={logs.UNCUT: self._settings.log_task},
                )
            recorder = self._settings.recorder
            if recorder is not None and not resumed:  # a resumed session keeps its recording
                await recorder.open(session, start, policy, spec)
            yield agent_pb2.RunSessionResponse(
                started=convert.session_started_to_pb(session, spec, resumed=resumed)
            )
            async for response in self._steps(session, policy, resumed=resumed):
                yield response
        except _StreamLost:
            return  # the cleanup detaches the session
        except FrameMemoryFull:
            # Not the session's fault: it stays, detached, for its client to resume
            # once other sessions have given frame memory back.
            raise
        except (asyncio.CancelledError, GeneratorExit):
            raise  # the RPC is gone: the cleanup detaches the session
        except BaseException:
            self._fatal = True
            raise
        finally:
            await self._cleanup()

    # Opening ------------------------------------------------------------------------

    def _check_start(self, first: agent_pb2.RunSessionRequest) -> agent_pb2.SessionStart:
        kind = first.WhichOneof("event")
        if kind is None:
            raise InvalidArgument("event", "empty message: set start, observation or cancel")
        if kind != "start":
            raise FailedPrecondition(
                "start", f"the first message must be start, got {kind}", kind="PROTOCOL"
            )
        if not first.start.resume_token and not first.start.task.strip():
            raise InvalidArgument("start.task", "the task is empty")
        return first.start

    def _open(self, start: agent_pb2.SessionStart) -> tuple[Session, Policy, bool]:
        request = convert.session_request_from_pb(start)
        if self._registry.shutting_down.is_set():
            raise Unavailable("the daemon is shutting down", retry_after_s=5.0)
        if request.resume_token:
            return self._reattach(request.resume_token, request.task)
        policy = self._catalog.get(request.policy)
        limit = self._settings.max_steps
        max_steps = min(request.max_steps, limit) if request.max_steps else limit
        session = self._registry.create(
            request,
            policy_name=policy.name,
            max_steps=max_steps,
            history_frames=policy.history_frames,
            principal=self._principal.name,
        )
        self._session, self._policy = session, policy
        return session, policy, False

    def _reattach(self, token: str, task: str) -> tuple[Session, Policy, bool]:
        found = self._registry.by_resume_token(token)  # NotFound: unknown or expired
        if task.strip() and task != found.task:
            raise InvalidArgument(
                "start.task", "differs from the task of the session this token resumes"
            )
        policy = self._catalog.get(found.policy_name)
        session = self._registry.reattach(token, self._principal.name)
        self._session, self._policy = session, policy
        return session, policy, True

    # The loop -----------------------------------------------------------------------

    async def _steps(
        self, session: Session, policy: Policy, *, resumed: bool
    ) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        refreshing = False
        try:
            while True:
                observation = await self._next_observation(session)
                received = time.perf_counter()
                if resumed and not observation.HasField("frame"):
                    raise InvalidArgument(
                        "observation.frame",
                        "required after a resume: the next step is decided from a fresh frame",
                    )
                resumed = False
                session.accept_results(
                    convert.results_from_pb(observation.results, "observation.results"),
                    "observation.results",
                )
                if not refreshing:
                    session.publish(
                        ObservationRead(tuple(observation.results), observation.user_reply)
                    )
                refreshing = False
                if session.ending is not None:
                    yield self._end(session, session.ending)
                    return
                await self._take_frame(session, observation)
                if session.step >= session.max_steps:
                    reason = f"reached the limit of {session.max_steps} steps"
                    yield self._end(session, Ending(SessionOutcome.STEP_LIMIT, reason=reason))
                    return
                if await self._gate(session):
                    # It was held: the person may have used the desktop meanwhile (a
                    # take-over), so the frame in hand is stale. An empty batch (not a
                    # model step: it repeats the last step's number) asks for a fresh one.
                    session.replace_newest_frame()
                    refreshing = True  # its observation answers no step: not recorded
                    yield agent_pb2.RunSessionResponse(actions=agent_pb2.Actions(step=session.step))
                    continue
                deciding = time.perf_counter()
                decision = await self._decide(session, policy)
                policy_seconds = time.perf_counter() - deciding
                actions, ending = session.record_decision(decision)
                message = convert.actions_to_pb(
                    session.step, actions, decision.thought, generation=decision.generation
                )
                broken = convert.actions_violation(message)
                if broken is not None:  # the daemon never sends more than the contract allows
                    self._publish_actions(session, message, decision, policy_seconds, sent=False)
                    reason = (
                        f"the policy's step broke the contract: {broken.field}: "
                        f"{broken.description}"
                    )
                    yield self._end(session, Ending(SessionOutcome.FAILED, reason=reason))
                    return
                if ending is not None and not actions:
                    # No Actions carry this step: its generation goes with the ending.
                    self._publish_actions(session, message, decision, policy_seconds, sent=False)
                    yield self._end(session, ending, decision.generation)
                    return
                # Even an empty batch goes out: the client answers with a new frame.
                logs.bind(action_ids=[a.action_id for a in message.actions])
                self._settings.metrics.step_sent(policy.name, time.perf_counter() - received)
                self._publish_actions(session, message, decision, policy_seconds)
                yield agent_pb2.RunSessionResponse(actions=message)
        except _Interrupted as interrupted:
            if interrupted.after_send:
                yield self._ended_message(session, interrupted.ending)
                self._finish(session, interrupted.ending)
            else:
                yield self._end(session, interrupted.ending)

    async def _take_frame(self, session: Session, observation: agent_pb2.Observation) -> None:
        if not observation.HasField("frame"):
            raise InvalidArgument("observation.frame", "required (the screen after the actions)")
        sent = observation.frame
        if sent.base_frame_id:
            if not self._settings.accept_deltas:
                raise InvalidArgument(
                    "observation.frame.base_frame_id",
                    "this daemon does not accept delta frames (its FrameSpec.accept_deltas "
                    "is false): send full frames",
                )
            delta = convert.frame_delta_from_pb(sent, "observation.frame")
            # Rebuilt into a full frame: nothing downstream knows about deltas.
            frame = await frame_deltas.resolve(
                delta,
                session.frames,
                self._settings.frame_limits,
                "observation.frame",
                self._settings.decoded_screens,
            )
            wire_bytes = delta.wire_bytes
        else:
            frame = convert.frame_from_pb(sent, "observation.frame")
            # A rebuilt frame needs no such check: its delta was checked against its
            # base, and the daemon made its bytes (reading them back cost ~6% of a step).
            validate_frame(frame, self._settings.frame_limits, "observation.frame")
            # A delta keeps its base's size, so checking full frames covers both.
            check_fits(frame.size, self._frame_spec, "observation.frame")
            wire_bytes = len(frame.data)
        self._settings.metrics.frame_received("RunSession", wire_bytes)
        # Observers hear FrameTaken: the window's newest, the full image the policy sees.
        session.accept_frame(frame, "observation.frame")
        session.user_reply = observation.user_reply

    def _publish_actions(
        self,
        session: Session,
        message: agent_pb2.Actions,
        decision: Decision,
        policy_seconds: float,
        *,
        sent: bool = True,
    ) -> None:
        session.publish(ActionsMade(message, decision, tuple(session.frames), policy_seconds, sent))

    async def _next_observation(self, session: Session) -> agent_pb2.Observation:
        item = await self._race(self._client_turn(session), session, stop_on_shutdown=True)
        if isinstance(item, HolodeskError):
            raise item
        if isinstance(item, BaseException):
            raise _StreamLost(f"{type(item).__name__}: {item}") from item
        if isinstance(item, _EndOfStream):
            raise _Interrupted(
                Ending(SessionOutcome.CANCELLED, reason="the client closed its stream"),
                after_send=True,
            )
        kind = item.WhichOneof("event")
        if kind == "observation":
            return convert.observation_from_pb(item.observation, "observation")
        if kind == "start":
            raise FailedPrecondition("start", "the session has already started", kind="PROTOCOL")
        raise InvalidArgument("event", "empty message: set observation or cancel")

    async def _client_turn(
        self, session: Session
    ) -> agent_pb2.RunSessionRequest | _EndOfStream | BaseException:
        """The client's next message, within the first-observation or idle limit:
        past it the session ends TIME_LIMIT and its slot is free for someone else."""
        first = self._first_observation
        settings = self._settings
        limit = (settings.first_observation_timeout_s if first else settings.idle_timeout_s) or None
        try:
            item = await asyncio.wait_for(self._queue.get(), limit)
        except TimeoutError:
            what = "no first observation" if first else "idle: no observation"
            reason = f"time limit: {what} within {limit:g} s"
            log.info("session %s: %s", session.session_id, reason)
            raise _Interrupted(Ending(SessionOutcome.TIME_LIMIT, reason=reason)) from None
        self._first_observation = False
        return item

    async def _gate(self, session: Session) -> bool:
        """Hold here while the session is paused (before its next model step); True
        when it held."""
        if not session.paused:
            return False
        session.held.set()
        try:
            await self._race(session.wait_running(), session, stop_on_shutdown=True)
        finally:
            session.held.clear()
        return True

    async def _decide(self, session: Session, policy: Policy) -> Decision:
        session.set_thinking(True)
        # Bound before the task starts, so the policy's own records carry the step too.
        logs.bind(step=session.step + 1, action_ids=())
        started = time.perf_counter()
        task = asyncio.create_task(policy.decide(session.context(self._settings.decoded_screens)))
        try:
            # A shutdown lets the running step finish: its actions still go out.
            decision = await self._race(
                task,
                session,
                stop_on_shutdown=False,
                step_timeout=self._settings.step_timeout_s or None,
            )
            self._settings.metrics.step_decided(
                policy.name, time.perf_counter() - started, decision
            )
            return decision
        finally:
            session.set_thinking(False)
            if not task.done():
                await self._abort_policy()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _race(
        self,
        work: Awaitable[T],
        session: Session,
        *,
        stop_on_shutdown: bool,
        step_timeout: float | None = None,
    ) -> T:
        """The work's result, unless the session is cancelled, runs out of time (its
        --max-session-s, or the step's --step-timeout-s), or the daemon stops first."""
        job = asyncio.ensure_future(work)
        watchers = [asyncio.ensure_future(session.cancelled.wait())]
        if stop_on_shutdown:
            watchers.append(asyncio.ensure_future(self._registry.shutting_down.wait()))
        session_left = session.seconds_left()
        timeout = step_timeout
        session_bound = session_left is not None and (
            step_timeout is None or session_left <= step_timeout
        )
        if session_bound:
            timeout = max(0.0, session_left or 0.0)
        try:
            await asyncio.wait(
                [job, *watchers], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in watchers:
                waiter.cancel()
            if not job.done() and not isinstance(work, asyncio.Task):
                job.cancel()
        if session.cancelled.is_set():
            raise _Interrupted(Ending(SessionOutcome.CANCELLED, reason=session.cancel_reason))
        if job.done():
            return job.result()
        if stop_on_shutdown and self._registry.shutting_down.is_set():
            raise Unavailable(
                f"the daemon is shutting down; session {session.session_id} stopped",
                retry_after_s=5.0,
            )
        if session_bound:
            limit = self._registry.limits.max_session_s
            reason = f"time limit: the session reached its maximum of {limit:g} s"
            raise _Interrupted(Ending(SessionOutcome.TIME_LIMIT, reason=reason))
        reason = (
            f"step {session.step + 1}: the policy did not decide within {step_timeout:g} s "
            "(step timeout)"
        )
        log.warning("session %s: %s", session.session_id, reason)
        raise _Interrupted(Ending(SessionOutcome.FAILED, reason=reason))

    def _ended_message(
        self, session: Session, ending: Ending, generation: StepGeneration | None = None
    ) -> agent_pb2.RunSessionResponse:
        return agent_pb2.RunSessionResponse(
            ended=convert.ending_to_pb(ending, session.step, generation)
        )

    def _finish(self, session: Session, ending: Ending) -> None:
        session.finish(ending)
        log.info(
            "session %s ended %s after %d step(s)%s",
            session.session_id,
            ending.outcome.value,
            session.step,
            f": {ending.reason}" if ending.reason else "",
        )

    def _end(
        self, session: Session, ending: Ending, generation: StepGeneration | None = None
    ) -> agent_pb2.RunSessionResponse:
        self._finish(session, ending)
        return self._ended_message(session, ending, generation)

    # Client stream -------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for request in self._requests:
                if request.WhichOneof("event") == "cancel" and self._session is not None:
                    # Never refused for its length (a stop must stop): cut instead.
                    reason = clip(request.cancel.reason, REASON_CHARS) or "cancelled by the client"
                    if self._session.ended is None:
                        self._session.cancel(reason)
                    continue
                await self._queue.put(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream broke: hand the error to the loop
            await self._queue.put(exc)
        else:
            await self._queue.put(_EOF)

    # Cleanup -------------------------------------------------------------------------

    def _cleanup_soon(self) -> None:
        """RPC done callback: runs even if the generator is never closed properly."""
        if self._cleaned:
            return
        try:
            task = asyncio.get_running_loop().create_task(self._cleanup())
        except RuntimeError:  # no loop: the server is gone, and the sessions with it
            return
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    async def _cleanup(self) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        if self._reader is not None:
            self._reader.cancel()
        session, policy = self._session, self._policy
        if session is None or policy is None:
            return
        # Run from an RPC done-callback this is a task of its own, outside run()'s context.
        logs.bind(session_id=session.session_id)
        if session.ended is None:
            # Detach first (synchronously): a resume may come as soon as this yields.
            detached = not self._fatal and self._registry.detach(session)
            if not detached:
                session.finish(Ending(SessionOutcome.CANCELLED, reason="the stream ended"))
            await self._abort_policy()
            if detached:
                log.info(
                    "session %s detached after step %d: its stream dropped; resumable for %g s",
                    session.session_id,
                    session.step,
                    self._registry.limits.resume_window_s,
                )
                return
            log.info("session %s dropped (stream ended before the session)", session.session_id)
        else:
            # Ended: what the policy keeps for it (a ModelPolicy's model images) can go.
            await self._abort_policy()
        self._registry.remove(session.session_id)

    async def _abort_policy(self) -> None:
        """Tell the policy to drop the session's work, once per stream."""
        session, policy = self._session, self._policy
        if self._aborted or session is None or policy is None:
            return
        self._aborted = True
        try:
            await policy.abort(session.session_id)
        except Exception:
            log.exception("policy %s failed to abort %s", policy.name, session.session_id)
