"""Runs one RunSession stream: the protocol of agent.proto, step by step.

    client: start           server: started (session id, resume token, frame spec)
    client: observation     server: actions (step 1)
    client: observation     server: actions (step 2)   <- results of step 1 inside
    ...                     server: ended (answer, failure, cancel, step/time limit)

This module is the step loop and a stream's end; the pieces it runs are apart,
each with one job: opening.py (the SessionStart -> a new or resumed session),
client_stream.py (a reader task drains the client's stream into a queue, so a
client `cancel` is seen even while the policy thinks; the first-observation and
idle limits), frame_intake.py (an observation's frame, full or delta, into the
session), step_race.py (what may cut a wait short: cancel, time limits, shutdown).
An operator's cancel (ControlService) arrives through the session's `cancelled`
event. Nothing here records or counts: the recorder, the metrics and the live view
observe the session's events (session_events.py).

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
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from holodesk.daemon import convert, logs
from holodesk.daemon.errors import DeadlineExceeded, InvalidArgument
from holodesk.daemon.frames import FrameSpec
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.policies.base import Decision, Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.principals import ANONYMOUS, Principal
from holodesk.daemon.session.client_stream import ClientStream, StreamLost
from holodesk.daemon.session.frame_intake import take_frame
from holodesk.daemon.session.frame_memory import FrameMemoryFull
from holodesk.daemon.session.opening import check_start, frame_spec_for, open_session
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_events import ActionsMade, ObservationRead, StreamOpened
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.settings import SessionSettings
from holodesk.daemon.session.step_race import Interrupted, race
from holodesk.daemon.session.values import Ending, SessionOutcome
from holodesk.proto.v1 import agent_pb2

log = logging.getLogger(__name__)
# Cleanups scheduled from RPC done-callbacks, referenced until they finish.
_BACKGROUND: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class _Made:
    """A step's decision, how long the policy took, and when its observation came."""

    decision: Decision
    policy_seconds: float
    received: float


class SessionRunner:
    """One RunSession stream, from its SessionStart to its end (see the module's
    docstring for how a stream's end decides its session's fate)."""

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
        self._client = ClientStream(requests, registry, settings)
        self._session: Session | None = None
        self._policy: Policy | None = None
        self._cleaned = False
        self._aborted = False
        # The stream ended by the daemon's decision (protocol error, shutdown): no detach.
        self._fatal = False
        # What this stream's frames were asked to look like (set when it starts).
        self._frame_spec = FrameSpec()
        # Its client reads SessionHeld (SessionStart.hold_notices).
        self._hold_notices = False

    async def run(self) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        opening = self._settings.first_observation_timeout_s or None
        try:
            first = await asyncio.wait_for(anext(self._requests), opening)
        except StopAsyncIteration:
            return  # the client left before starting: nothing to clean up
        except TimeoutError:
            # A stream that never starts holds no slot, but it holds a call: close it.
            raise DeadlineExceeded(f"no SessionStart within {opening:g} s of opening") from None
        start = check_start(first)
        self._hold_notices = start.hold_notices
        opened = open_session(start, self._registry, self._catalog, self._settings, self._principal)
        session, policy, resumed = opened.session, opened.policy, opened.resumed
        self._session, self._policy = session, policy
        # Every record this RPC's task (and the tasks it starts) logs names the session.
        logs.bind(session_id=session.session_id)
        session.publish(StreamOpened(resumed))
        self._context.add_done_callback(lambda _: self._cleanup_soon())
        try:
            self._client.start(session)
            spec = self._frame_spec = frame_spec_for(session, policy, self._settings)
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
        except StreamLost:
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

    # The loop -----------------------------------------------------------------------

    async def _steps(
        self, session: Session, policy: Policy, *, resumed: bool
    ) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        refreshing = False
        try:
            while True:
                observation = await self._client.next_observation(session)
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
                await take_frame(session, observation, self._settings, self._frame_spec)
                if session.step >= session.max_steps:
                    reason = f"reached the limit of {session.max_steps} steps"
                    yield self._end(session, Ending(SessionOutcome.STEP_LIMIT, reason=reason))
                    return
                if session.paused:
                    # Closed with the stream, so a hold cut short lets go of the session.
                    async with contextlib.aclosing(self._hold(session)) as notices:
                        async for notice in notices:
                            yield notice
                    # It was held: the person may have used the desktop meanwhile (a
                    # take-over), so the frame in hand is stale: ask for a fresh one.
                    refreshing = True  # its observation answers no step: not recorded
                    yield self._refresh(session)
                    continue
                decision, policy_seconds = await self._decide(session, policy)
                if session.relayed and not decision.actions:
                    # An attached desktop idle past its heartbeat, or a caller's
                    # GetFrame(refresh): a fresh frame, not a step (max_steps counts
                    # the steps its callers asked for).
                    refreshing = True
                    yield self._refresh(session)
                    continue
                made = _Made(decision, policy_seconds, received)
                actions, ending = session.record_decision(decision)
                message = convert.actions_to_pb(
                    session.step, actions, decision.thought, generation=decision.generation
                )
                broken = convert.actions_violation(message)
                if broken is not None:  # the daemon never sends more than the contract allows
                    self._publish_actions(session, message, made, sent=False)
                    reason = (
                        f"the policy's step broke the contract: {broken.field}: "
                        f"{broken.description}"
                    )
                    yield self._end(session, Ending(SessionOutcome.FAILED, reason=reason))
                    return
                if ending is not None and not actions:
                    # No Actions carry this step: its generation goes with the ending.
                    self._publish_actions(session, message, made, sent=False)
                    yield self._end(session, ending, decision.generation)
                    return
                # Even an empty batch goes out: the client answers with a new frame.
                logs.bind(action_ids=[a.action_id for a in message.actions])
                self._publish_actions(session, message, made)
                yield agent_pb2.RunSessionResponse(actions=message)
        except Interrupted as interrupted:
            if interrupted.after_send:
                yield self._ended_message(session, interrupted.ending)
                self._finish(session, interrupted.ending)
            else:
                yield self._end(session, interrupted.ending)

    def _refresh(self, session: Session) -> agent_pb2.RunSessionResponse:
        """An empty batch that asks the client for a fresh frame and is not a step: it
        repeats the last step's number, nothing is counted or recorded, and the frame
        it brings replaces the one in hand (no step was decided on that one)."""
        session.replace_newest_frame()
        return agent_pb2.RunSessionResponse(actions=agent_pb2.Actions(step=session.step))

    def _publish_actions(
        self,
        session: Session,
        message: agent_pb2.Actions,
        made: _Made,
        *,
        sent: bool = True,
    ) -> None:
        """Tell the observers (recorder, metrics) the step's message, sent or not."""
        session.publish(
            ActionsMade(
                message,
                made.decision,
                tuple(session.frames),
                made.policy_seconds,
                sent,
                step_seconds=time.perf_counter() - made.received,
            )
        )

    async def _hold(self, session: Session) -> AsyncGenerator[agent_pb2.RunSessionResponse]:
        """Hold here while the session is paused (before its next model step), telling
        a client that asked (SessionStart.hold_notices) that it is held, again when a
        pause turns into a take-over, and that it runs again, with the operator's note:
        otherwise the terminal of `holodesk run` would sit silent meanwhile."""
        told: bool | None = None  # the taken_over last told; None: nothing told yet
        session.held.set()
        try:
            while session.paused:
                if self._hold_notices and told is not session.taken_over:
                    told = session.taken_over
                    yield agent_pb2.RunSessionResponse(
                        held=convert.held_to_pb(True, taken_over=told)
                    )
                    continue  # look again: things ran while the notice went out
                session.hold_changed.clear()  # no await since the look: nothing missed
                await race(
                    session.hold_changed.wait(), session, self._registry, stop_on_shutdown=True
                )
        finally:
            session.held.clear()
        if told is not None:
            yield agent_pb2.RunSessionResponse(
                held=convert.held_to_pb(False, taken_over=told, note=session.operator_note)
            )

    async def _decide(self, session: Session, policy: Policy) -> tuple[Decision, float]:
        """The policy's decision for the next step, and the seconds its decide() took."""
        session.set_thinking(True)
        # Bound before the task starts, so the policy's own records carry the step too.
        logs.bind(step=session.step + 1, action_ids=())
        started = time.perf_counter()
        task = asyncio.create_task(policy.decide(session.context(self._settings.decoded_screens)))
        try:
            # A shutdown lets the running step finish: its actions still go out.
            decision = await race(
                task,
                session,
                self._registry,
                stop_on_shutdown=False,
                step_timeout=self._settings.step_timeout_s or None,
            )
            return decision, time.perf_counter() - started
        finally:
            session.set_thinking(False)
            if not task.done():
                await self._abort_policy()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

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
        self._client.stop()
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
