"""One agent run: stream frames to the daemon and replay its actions until it ends.

    start -> started -> observation -> actions -> observation (results) -> ... -> ended

Every call into the platform backend runs on one thread of the session, in order
(backend_thread.py). What the session tells others goes through one door each:
its steps to StepLog (outcome.py: on_step, then the outcome's history), the wire
messages to its recording's tape (recording.py), notices to on_notice. What outlives
any one stream (the session id and resume token, the stream now open, what a drop
means, the backoff, telling the daemon it stops) is its DaemonLink's (link.py), so
this module is the conversation loop and how a session stops.

The client acts only while its stream is alive. When the stream drops, the
running action completes, nothing more starts, held input is released, and the
client reconnects with backoff (resume.py) and resumes: SessionStart carries the latest
resume token, and the daemon's pending action ids are answered from the
executor's record (which outlives streams), so no action id ever runs twice.
A stop (Ctrl-C, SIGTERM, the tray, the emergency-stop hotkey, the fail-safe
corner) ends the session at once, whatever the stream is doing, and cuts the
running action off between its input events. So does the daemon closing the
stream (an operator's cancel, a time limit): its SessionEnded is the outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc
import grpc.aio

from holodesk.client import actions as a
from holodesk.client import convert
from holodesk.client.backend_thread import BackendThread
from holodesk.client.capture import CaptureError, FrameCapturer
from holodesk.client.channel import ChannelSettings
from holodesk.client.events import Ended, Notice, Outcome, Resumed, SafetyNotice, Started
from holodesk.client.executor import ActionExecutor, BatchReport
from holodesk.client.frames import SentFrame
from holodesk.client.generation import Sampling
from holodesk.client.halt import Halt, HaltReason, HaltState
from holodesk.client.link import DaemonLink
from holodesk.client.outcome import SessionOutcome, StepLog, StepRecord, final_decision
from holodesk.client.pause import PauseGate
from holodesk.client.prompt import NoUserError, in_daemon_thread, prompt_user
from holodesk.client.reconnect import ReconnectPolicy
from holodesk.client.recording import ClientRecorder, NoRecording, SessionTape
from holodesk.client.resume import Connector, status_name
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.stream import ProtocolError, SessionStream
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.safety.hotkeys import HotkeyError, HotkeyListener
from holodesk.proto.v1 import agent_pb2
from holodesk.values.encoding import ImageEncoding

__all__ = ["SessionOptions", "SessionOutcome", "StepRecord", "run_session"]


@dataclass(frozen=True)
class SessionOptions:
    # A display id, "all" for the whole virtual desktop, or None for the primary display.
    display: str | None = None
    max_steps: int = 0
    policy: str = ""
    encodings: tuple[ImageEncoding, ...] = tuple(ImageEncoding)
    # How the model samples this session (None: the daemon policy's defaults).
    sampling: Sampling | None = None
    # Keep each step's frame bytes in StepRecord.frame (else only its coordinate
    # frame: a long session would hold every screenshot in memory).
    keep_frames: bool = False
    # Record the session here as well, in the recording format (client side: no prompts).
    record_dir: Path | None = None
    ask_user: Callable[[str], str] = prompt_user
    on_started: Callable[[Started], None] | None = None
    on_step: Callable[[StepRecord], None] | None = None
    # Reconnects, resumes, and safety features that could not start.
    on_notice: Callable[[Notice], None] | None = None
    # How long a cancel waits for the running action and for the daemon's SessionEnded.
    cancel_grace_s: float = 5.0
    # Used when run_session is given an address (not a channel).
    channel: ChannelSettings = field(default_factory=ChannelSettings)
    reconnect: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    safety: SafetySettings = field(default_factory=SafetySettings)
    # Lets another thread (the tray) pause the session between steps.
    pause: PauseGate | None = None


async def run_session(
    target: str | grpc.aio.Channel,
    task: str,
    backend: Backend,
    options: SessionOptions | None = None,
) -> SessionOutcome:
    """Run one session; never leaves input held, however it ends.

    Given an address, the session opens its own channel, and a fresh one for each
    reconnect; given a channel, it reuses that one (and gRPC's own reconnect backoff).
    """
    options = options or SessionOptions()
    if not task.strip():
        raise ValueError("the task is empty")
    connector = Connector(target, options.channel)
    return await _Session(connector, task, backend, options).run()


class _Session:
    def __init__(
        self, connector: Connector, task: str, backend: Backend, options: SessionOptions
    ) -> None:
        self._connector = connector
        self._task = task
        self._backend = backend
        self._options = options
        self._tape: SessionTape = (
            ClientRecorder(options.record_dir) if options.record_dir else NoRecording()
        )
        self._steps = StepLog(keep_frames=options.keep_frames, on_step=options.on_step)
        self._halt = Halt()
        self._link = DaemonLink(connector, self._halt, options.reconnect, self._notify)
        self._executor = ActionExecutor(backend, guard=SafetyGuard(options.safety, backend))
        self._thread = BackendThread(options.cancel_grace_s)
        self._main: asyncio.Task[SessionOutcome] | None = None
        self._release_error = ""
        # Replies to ask_user actions, by action id, in case a resume must repeat one.
        self._replies: dict[str, str] = {}
        # The batch being executed, so a cancel can still report what it did.
        self._running: a.ActionBatch | None = None
        self._last_frame: SentFrame | None = None

    async def run(self) -> SessionOutcome:
        loop = asyncio.get_running_loop()
        hotkey = await self._start_hotkey()
        unsubscribe = self._halt.subscribe(lambda state: self._on_halt(loop, state))
        self._main = asyncio.create_task(self._run_main(), name="holodesk-session")
        try:
            try:
                outcome = await self._main
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    task.uncancel()  # handled: the caller gets a CANCELLED outcome
                self._halt.trigger(HaltReason.USER, "cancelled by the user")
                state = self._halt.state
                outcome = await self._cancel(state.message if state else "cancelled by the user")
        finally:
            unsubscribe()
            self._halt.trigger(HaltReason.USER, "the session ended")
            await self._thread.settle()
            await self._release()
            await self._link.close()
            self._thread.shutdown()
            await self._connector.close()
            if hotkey is not None:
                await asyncio.to_thread(hotkey.stop)
        if self._release_error:
            error = self._release_error
            outcome = replace(
                outcome, reason=f"{outcome.reason}; {error}" if outcome.reason else error
            )
        path = await self._tape.finish(
            outcome.outcome, outcome.answer, outcome.reason, outcome.steps
        )
        return replace(outcome, recording=str(path) if path else "")

    # -- stopping -------------------------------------------------------------------------

    async def _start_hotkey(self) -> HotkeyListener | None:
        chord = self._options.safety.emergency_stop
        if chord is None:
            return None
        listener = HotkeyListener(chord, lambda: self._emergency_stop(chord))
        try:
            await asyncio.to_thread(listener.start)
        except HotkeyError as error:
            self._notify(SafetyNotice(f"no emergency-stop hotkey: {error}; stop with Ctrl-C"))
            return None
        return listener

    def _emergency_stop(self, chord: str) -> None:
        self._halt.trigger(HaltReason.EMERGENCY_STOP, f"emergency stop ({chord} pressed)")

    def _on_halt(self, loop: asyncio.AbstractEventLoop, state: HaltState) -> None:
        """Any thread: a final halt ends the session now, even while it waits for the daemon."""
        if not state.final or state.reason is HaltReason.DAEMON_ENDED:
            # The daemon's end needs no cancel: the conversation reads its SessionEnded.
            return
        # A closed loop means the session is over anyway.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._cancel_main)

    def _cancel_main(self) -> None:
        if self._main is not None and not self._main.done():
            self._main.cancel()

    # -- resuming: the link decides when, this loop starts each conversation -------------

    async def _run_main(self) -> SessionOutcome:
        while True:
            try:
                ended = await self._converse()
            except grpc.aio.AioRpcError as error:
                if not self._link.may_resume(error):
                    reason = self._link.error_reason(error)
                    return self._outcome(Outcome.ERROR, reason, status_name(error, "UNKNOWN"))
                gave_up = await self._link.back_off(error, self._stop_acting)
                if gave_up is not None:
                    return self._outcome(Outcome.ERROR, gave_up, status_name(error))
                continue
            except (ProtocolError, convert.ConversionError, CaptureError, PlatformError) as error:
                await self._link.abandon(str(error))
                return self._outcome(Outcome.ERROR, str(error))
            if ended.steps > self._steps.last_step:
                # The last step ran nothing here (a done or fail alone): still a step,
                # decided on the last frame, with its generation where it has one.
                final = a.ActionBatch(ended.steps, (), generation=ended.generation)
                self._steps.add(
                    final,
                    (),
                    self._last_frame,
                    ending=final_decision(ended.outcome, ended.answer, ended.reason),
                )
            return self._steps.outcome(
                ended.outcome, ended.answer, ended.reason, ended.steps, "", self._link.session_id
            )

    async def _stop_acting(self) -> None:
        """The stream dropped: let the running action finish, then release held input."""
        await self._thread.settle()
        await self._release()

    # -- the conversation ---------------------------------------------------------------

    async def _converse(self) -> Ended:
        stream = await self._link.open()
        options = self._options
        displays = await self._thread.run(self._backend.screen.displays)
        start = convert.session_start(
            self._task,
            self._backend,
            displays,
            encodings=options.encodings,
            max_steps=options.max_steps,
            policy=options.policy,
            resume_token=self._link.resume_token,
            sampling=options.sampling,
        )
        await stream.write(start)
        first = await stream.next()
        if first.WhichOneof("event") == "ended":
            return self._ended(first.ended)
        if first.WhichOneof("event") != "started":
            raise ProtocolError(f"expected 'started', the daemon sent {_kind(first)!r}")
        started = convert.started_from_pb(first.started)
        resuming = self._link.resuming
        self._link.accept(started)
        self._tape.begin(start.start, first.started)
        capturer = FrameCapturer(
            self._backend.screen, started.frame_spec, options.display, options.safety.redact
        )
        if resuming:
            await self._answer_resume(stream, started, capturer)
        else:
            if options.on_started is not None:
                options.on_started(started)
            self._halt.link_restored()
            await stream.write(self._observation([], await self._capture(capturer)))
        while True:
            event = await stream.next()
            if event.WhichOneof("event") == "ended":
                return self._ended(event.ended)
            if event.WhichOneof("event") != "actions":
                raise ProtocolError(
                    f"expected 'actions' or 'ended', the daemon sent {_kind(event)!r}"
                )
            batch = convert.batch_from_pb(event.actions)
            decided_on = self._last_frame.frame_id if self._last_frame else ""
            self._tape.actions(event.actions, decided_on)
            self._running = batch
            report: BatchReport = await self._thread.run(
                self._executor.execute, batch.actions, self._halt
            )
            self._running = None
            self._release_error = self._release_error or report.release_error
            results, reply = list(report.results), ""
            if isinstance(report.control, a.AskUser):
                reply, results = await self._ask(report.control, results)
            # The latest frame sent is the one the daemon decided this batch on.
            self._steps.add(batch, results, self._last_frame)
            state = self._halt.state
            if state is not None and state.reason is HaltReason.DAEMON_ENDED:
                return await self._ended_by_daemon(stream)
            if isinstance(report.control, a.Done | a.Fail):
                # The session is over: report the results and wait for the verdict.
                await stream.write(self._observation(results, None))
                final = await stream.next()
                if final.WhichOneof("event") != "ended":
                    raise ProtocolError(
                        f"expected 'ended' after {type(report.control).__name__.lower()}, "
                        f"the daemon sent {_kind(final)!r}"
                    )
                return self._ended(final.ended)
            await stream.write(self._observation(results, await self._capture(capturer), reply))

    async def _ended_by_daemon(self, stream: SessionStream) -> Ended:
        """The SessionEnded the daemon sent before closing the stream mid-batch."""
        while True:
            event = await stream.next()  # ProtocolError if it closed without one
            if event.WhichOneof("event") == "ended":
                return self._ended(event.ended)

    def _ended(self, message: agent_pb2.SessionEnded) -> Ended:
        """The daemon's verdict; its last step's generation, if it carries one, is
        recorded (that step sent no Actions)."""
        ended = convert.ended_from_pb(message)
        self._tape.ended(message, self._last_frame.frame_id if self._last_frame else "")
        return ended

    async def _answer_resume(
        self, stream: SessionStream, started: Started, capturer: FrameCapturer
    ) -> None:
        """Report what became of the daemon's pending actions, with a fresh frame."""
        self._link.resumed()
        results = self._executor.results_for(started.pending_action_ids)
        reply = next(
            (self._replies[i] for i in started.pending_action_ids if i in self._replies), ""
        )
        self._notify(Resumed(started.session_id, started.step, len(results)))
        # Acting may start again only now: the new stream is alive and answered.
        self._halt.link_restored()
        await stream.write(self._observation(results, await self._capture(capturer), reply))

    def _observation(
        self, results: list[a.ActionResult], frame: SentFrame | None, reply: str = ""
    ) -> agent_pb2.RunSessionRequest:
        request = convert.observation(results, frame, reply)
        # Results of step N, then the frame step N+1 is decided on: the format's order.
        self._tape.observation(request.observation)
        if frame is not None:
            self._tape.frame(frame)
        return request

    async def _capture(self, capturer: FrameCapturer) -> SentFrame:
        if self._options.pause is not None:
            # Paused: hold the next frame, so the daemon decides nothing new meanwhile.
            await self._options.pause.wait_resumed()
        frame: SentFrame = await self._thread.run(capturer.capture)
        self._executor.remember_frame(frame)
        self._last_frame = frame
        return frame

    async def _ask(
        self, action: a.AskUser, results: list[a.ActionResult]
    ) -> tuple[str, list[a.ActionResult]]:
        ask = self._options.ask_user
        try:
            reply = await in_daemon_thread(lambda: ask(action.question))
        except (NoUserError, OSError, EOFError) as error:
            failed = a.ActionResult(
                action.action_id, a.ActionStatus.FAILED, str(error) or "no reply"
            )
            self._executor.amend(failed)
            return "", [failed if r.action_id == action.action_id else r for r in results]
        self._replies[action.action_id] = reply
        return reply, results

    def _record_interrupted(self) -> None:
        pending, batch = self._thread.last_call, self._running
        if batch is None or pending is None or not pending.done() or pending.exception():
            return
        report: BatchReport = pending.result()
        self._steps.add(batch, report.results, self._last_frame)
        self._running = None

    def _notify(self, notice: Notice) -> None:
        if self._options.on_notice is not None:
            self._options.on_notice(notice)

    # -- endings --------------------------------------------------------------------------

    async def _cancel(self, reason: str) -> SessionOutcome:
        """Stop input first, then tell the daemon and wait briefly for its SessionEnded."""
        await self._thread.settle()
        self._record_interrupted()
        await self._release()
        ended = await self._link.cancel(reason, self._options.cancel_grace_s)
        final_reason = ended.reason if ended is not None and ended.reason else reason
        steps = ended.steps if ended is not None else 0
        return self._steps.outcome(
            Outcome.CANCELLED, "", final_reason, steps, "", self._link.session_id
        )

    def _outcome(self, outcome: Outcome, reason: str, status_code: str = "") -> SessionOutcome:
        """An ending on the client's side (an error): the steps so far, and why."""
        return self._steps.outcome(outcome, "", reason, 0, status_code, self._link.session_id)

    # -- the backend worker ---------------------------------------------------------------

    async def _release(self) -> None:
        """Release held input on the backend thread (after any running action)."""
        done, error = await self._thread.within_grace(self._executor.release_all)
        if not done:
            error = "releasing held input timed out: an action still runs"
        self._release_error = self._release_error or error or ""


def _kind(event: agent_pb2.RunSessionResponse) -> str:
    return event.WhichOneof("event") or "nothing"
