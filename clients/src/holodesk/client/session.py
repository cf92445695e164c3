"""One agent run: stream frames to the daemon and replay its actions until it ends.

    start -> started -> observation -> actions -> observation (results) -> ... -> ended

Every call into the platform backend runs on one worker thread of the session,
in order: OS input APIs can be thread-affine (per-thread DPI awareness on
Windows), and a release queued behind a running action runs after it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
import grpc.aio

from holodesk.client import actions as a
from holodesk.client import convert
from holodesk.client.capture import CaptureError, FrameCapturer
from holodesk.client.channel import DEFAULT_MAX_MESSAGE_BYTES, open_channel
from holodesk.client.events import Ended, Outcome, Started
from holodesk.client.executor import ActionExecutor, BatchReport
from holodesk.client.frames import Encoding, SentFrame
from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.prompt import NoUserError, in_daemon_thread, prompt_user
from holodesk.client.stream import ProtocolError, SessionStream
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.proto.v1 import agent_pb2

__all__ = ["SessionOptions", "SessionOutcome", "StepRecord", "run_session"]

T = TypeVar("T")


@dataclass(frozen=True)
class SessionOptions:
    # A display id, "all" for the whole virtual desktop, or None for the primary display.
    display: str | None = None
    max_steps: int = 0
    policy: str = ""
    encodings: tuple[Encoding, ...] = tuple(Encoding)
    ask_user: Callable[[str], str] = prompt_user
    on_started: Callable[[Started], None] | None = None
    on_step: Callable[[StepRecord], None] | None = None
    # How long a cancel waits for the running action and for the daemon's SessionEnded.
    cancel_grace_s: float = 5.0
    # Channel settings, used when run_session is given an address.
    insecure: bool | None = None
    root_certificates: Path | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


async def run_session(
    target: str | grpc.aio.Channel,
    task: str,
    backend: Backend,
    options: SessionOptions | None = None,
) -> SessionOutcome:
    """Run one session; never leaves input held, however it ends."""
    options = options or SessionOptions()
    if not task.strip():
        raise ValueError("the task is empty")
    if not isinstance(target, str):
        return await _Session(target, task, backend, options, "").run()
    channel = open_channel(
        target,
        insecure=options.insecure,
        root_certificates=options.root_certificates,
        max_message_bytes=options.max_message_bytes,
    )
    try:
        return await _Session(channel, task, backend, options, target).run()
    finally:
        await channel.close()


class _Session:
    def __init__(
        self,
        channel: grpc.aio.Channel,
        task: str,
        backend: Backend,
        options: SessionOptions,
        target: str,
    ) -> None:
        self._channel = channel
        self._task = task
        self._backend = backend
        self._options = options
        self._target = target
        self._executor = ActionExecutor(backend)
        self._stop = threading.Event()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holodesk-backend")
        self._pending: asyncio.Future[Any] | None = None
        self._history: list[StepRecord] = []
        self._session_id = ""
        self._release_error = ""
        # The batch being executed, so a cancel can still report what it did.
        self._running: a.ActionBatch | None = None

    async def run(self) -> SessionOutcome:
        stream = SessionStream(self._channel)
        try:
            outcome = await self._run(stream)
        finally:
            self._stop.set()
            await self._settle()
            await self._release()
            await stream.close()
            self._worker.shutdown(wait=False)
        if self._release_error:
            error = self._release_error
            outcome = replace(
                outcome, reason=f"{outcome.reason}; {error}" if outcome.reason else error
            )
        return outcome

    async def _run(self, stream: SessionStream) -> SessionOutcome:
        try:
            ended = await self._converse(stream)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # handled: the caller gets a CANCELLED outcome
            return await self._cancel(stream, "cancelled by the user")
        except grpc.aio.AioRpcError as error:
            return self._rpc_error(error)
        except (ProtocolError, convert.ConversionError, CaptureError, PlatformError) as error:
            await self._abandon(stream, str(error))
            return self._outcome(Outcome.ERROR, reason=str(error))
        return self._outcome(ended.outcome, ended.answer, ended.reason, ended.steps)

    # -- the conversation ---------------------------------------------------------------

    async def _converse(self, stream: SessionStream) -> Ended:
        displays = await self._on_worker(self._backend.screen.displays)
        options = self._options
        await stream.write(
            convert.session_start(
                self._task,
                self._backend,
                displays,
                encodings=options.encodings,
                max_steps=options.max_steps,
                policy=options.policy,
            )
        )
        first = await stream.next()
        if first.WhichOneof("event") == "ended":
            return convert.ended_from_proto(first.ended)
        if first.WhichOneof("event") != "started":
            raise ProtocolError(f"expected 'started', the daemon sent {_kind(first)!r}")
        started = convert.started_from_proto(first.started)
        self._session_id = started.session_id
        if options.on_started is not None:
            options.on_started(started)
        capturer = FrameCapturer(self._backend.screen, started.frame_spec, options.display)
        await stream.write(convert.observation([], await self._capture(capturer)))
        while True:
            event = await stream.next()
            if event.WhichOneof("event") == "ended":
                return convert.ended_from_proto(event.ended)
            if event.WhichOneof("event") != "actions":
                raise ProtocolError(
                    f"expected 'actions' or 'ended', the daemon sent {_kind(event)!r}"
                )
            batch = convert.batch_from_proto(event.actions)
            self._running = batch
            report: BatchReport = await self._on_worker(
                self._executor.execute, batch.actions, self._stop
            )
            self._running = None
            results, reply = list(report.results), ""
            if isinstance(report.control, a.AskUser):
                reply, results = await self._ask(report.control, results)
            self._record(StepRecord(batch.step, batch.actions, tuple(results), batch.thought))
            if isinstance(report.control, a.Done | a.Fail):
                # The session is over: report the results and wait for the verdict.
                await stream.write(convert.observation(results, None))
                final = await stream.next()
                if final.WhichOneof("event") != "ended":
                    raise ProtocolError(
                        f"expected 'ended' after {type(report.control).__name__.lower()}, "
                        f"the daemon sent {_kind(final)!r}"
                    )
                return convert.ended_from_proto(final.ended)
            await stream.write(convert.observation(results, await self._capture(capturer), reply))

    async def _capture(self, capturer: FrameCapturer) -> SentFrame:
        frame: SentFrame = await self._on_worker(capturer.capture)
        self._executor.remember_frame(frame)
        return frame

    async def _ask(
        self, action: a.AskUser, results: list[a.ActionResult]
    ) -> tuple[str, list[a.ActionResult]]:
        ask = self._options.ask_user
        try:
            return await in_daemon_thread(lambda: ask(action.question)), results
        except (NoUserError, OSError, EOFError) as error:
            failed = a.ActionResult(
                action.action_id, a.ActionStatus.FAILED, str(error) or "no reply"
            )
            self._executor.amend(failed)
            return "", [failed if r.action_id == action.action_id else r for r in results]

    def _record(self, record: StepRecord) -> None:
        self._history.append(record)
        if self._options.on_step is not None:
            self._options.on_step(record)

    def _record_interrupted(self) -> None:
        pending, batch = self._pending, self._running
        if batch is None or pending is None or not pending.done() or pending.exception():
            return
        report: BatchReport = pending.result()
        self._record(StepRecord(batch.step, batch.actions, tuple(report.results), batch.thought))
        self._running = None

    # -- endings --------------------------------------------------------------------------

    async def _cancel(self, stream: SessionStream, reason: str) -> SessionOutcome:
        """Stop input first, then tell the daemon and wait briefly for its SessionEnded."""
        self._stop.set()
        await self._settle()
        self._record_interrupted()
        await self._release()
        ended: Ended | None = None
        try:
            async with asyncio.timeout(self._options.cancel_grace_s):
                await stream.write(convert.cancel(reason))
                while ended is None:
                    event = await stream.next()
                    if event.WhichOneof("event") == "ended":
                        ended = convert.ended_from_proto(event.ended)
        except (TimeoutError, grpc.aio.AioRpcError, ProtocolError, convert.ConversionError):
            pass  # cancelled on our side regardless; the daemon's word is a courtesy
        final_reason = ended.reason if ended is not None and ended.reason else reason
        steps = ended.steps if ended is not None else 0
        return self._outcome(Outcome.CANCELLED, reason=final_reason, steps=steps)

    async def _abandon(self, stream: SessionStream, reason: str) -> None:
        """A client-side failure: tell the daemon why, without waiting for an answer."""
        try:
            async with asyncio.timeout(1.0):
                await stream.write(convert.cancel(reason))
        except (TimeoutError, grpc.aio.AioRpcError, ProtocolError):
            pass

    def _rpc_error(self, error: grpc.aio.AioRpcError) -> SessionOutcome:
        code = error.code()
        name = code.name if code is not None else "UNKNOWN"
        details = error.details() or "no details"
        if not self._session_id and code == grpc.StatusCode.UNAVAILABLE:
            where = f" at {self._target}" if self._target else ""
            reason = f"could not reach the daemon{where}: {name}: {details}"
        else:
            reason = f"the daemon ended the stream: {name}: {details}"
        return self._outcome(Outcome.ERROR, reason=reason, status_code=name)

    def _outcome(
        self,
        outcome: Outcome,
        answer: str = "",
        reason: str = "",
        steps: int = 0,
        status_code: str = "",
    ) -> SessionOutcome:
        return SessionOutcome(
            outcome=outcome,
            answer=answer,
            reason=reason,
            steps=steps or len(self._history),
            history=tuple(self._history),
            session_id=self._session_id,
            status_code=status_code,
        )

    # -- the backend worker ---------------------------------------------------------------

    async def _on_worker(self, function: Callable[..., T], *args: Any) -> T:
        """Run on the backend thread; if we are cancelled, it still completes (see _settle)."""
        future = asyncio.get_running_loop().run_in_executor(self._worker, function, *args)
        self._pending = future
        return await asyncio.shield(future)

    async def _settle(self) -> None:
        """Give the running backend call (stop is set) time to finish."""
        if self._pending is not None and not self._pending.done():
            await asyncio.wait([self._pending], timeout=self._options.cancel_grace_s)

    async def _release(self) -> None:
        """Release held input on the backend thread (after any running action)."""
        future = asyncio.get_running_loop().run_in_executor(
            self._worker, self._executor.release_all
        )
        done, _ = await asyncio.wait([future], timeout=self._options.cancel_grace_s)
        error = future.result() if done else "releasing held input timed out: an action still runs"
        self._release_error = self._release_error or error


def _kind(event: agent_pb2.RunSessionResponse) -> str:
    return event.WhichOneof("event") or "nothing"
