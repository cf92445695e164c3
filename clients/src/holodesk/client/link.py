"""A session's link to the daemon: one stream at a time, kept across dropped streams.

The conversation (session.py) reads and writes the stream it is handed and nothing
more. Which stream that is, what its end means (stop acting now, and say so when it
can be resumed), whether a new stream is answered as a resume of this very session,
how long to back off before the next try (resume.py's Recovery), and how the
session tells the daemon it stops are this module's: the part of a session that
outlives any one stream, so that the conversation loop can be read as if there were
only one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc.aio

from holodesk.client import convert
from holodesk.client.events import Ended, LinkLost, Notice, Reconnecting, Started
from holodesk.client.halt import Halt, HaltReason
from holodesk.client.reconnect import ReconnectPolicy, is_resumable
from holodesk.client.resume import Connector, Recovery, describe, stream_error_reason
from holodesk.client.stream import ProtocolError, SessionStream


class DaemonLink:
    """The session's id and resume token, the stream now open, and its outages."""

    def __init__(
        self,
        connector: Connector,
        halt: Halt,
        policy: ReconnectPolicy,
        notify: Callable[[Notice], None],
    ) -> None:
        self._connector = connector
        self._halt = halt
        self._policy = policy
        self._recovery = Recovery(policy)
        self._notify = notify
        self._stream: SessionStream | None = None
        self._resume_token = ""
        # The session's id once the daemon started it ("" before).
        self.session_id = ""
        # Whether the stream now open asks to resume the session (until it is answered).
        self.resuming = False

    @property
    def stream(self) -> SessionStream | None:
        return self._stream

    @property
    def resume_token(self) -> str:
        """The latest token the daemon gave ("" before the session started)."""
        return self._resume_token

    async def open(self) -> SessionStream:
        """A new stream; it asks to resume when the session already holds a token."""
        channel = await self._connector.open()
        holder: list[SessionStream] = []
        stream = SessionStream(
            channel,
            on_end=lambda error: self._on_end(holder[0], error),
            on_held=lambda held: self._notify(convert.held_from_pb(held)),
        )
        holder.append(stream)
        self._stream = stream
        self.resuming = bool(self._resume_token)
        return stream

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.close()

    def accept(self, started: Started) -> None:
        """Keep the daemon's session id and token; a resume must be answered as this session."""
        if self.resuming and (not started.resumed or started.session_id != self.session_id):
            raise ProtocolError(
                f"the daemon did not resume session {self.session_id} "
                f"(it answered with session {started.session_id!r}, resumed={started.resumed})"
            )
        self.session_id = started.session_id
        self._resume_token = started.resume_token

    def resumed(self) -> None:
        """The daemon answered the resume: the outage is over."""
        self.resuming = False
        self._recovery.resumed()

    def may_resume(self, error: grpc.aio.AioRpcError) -> bool:
        """Whether this error leaves the session worth resuming."""
        return bool(self._resume_token) and is_resumable(error, self.resuming)

    async def back_off(
        self, error: grpc.aio.AioRpcError, stop_acting: Callable[[], Awaitable[None]]
    ) -> str | None:
        """After a drop: stop acting, close the stream, wait out the backoff.

        Returns why the session gives up instead, when the policy says it is time."""
        cause = describe(error)
        self._halt.trigger(HaltReason.LINK_LOST, f"the stream to the daemon dropped ({cause})")
        await stop_acting()
        await self.close()
        delay = self._recovery.next_delay(error)
        if delay is None:
            return self._recovery.gave_up_reason(self.session_id)
        self._notify(Reconnecting(self._recovery.attempts, self._policy.max_attempts, delay, cause))
        await asyncio.sleep(delay)
        return None

    def error_reason(self, error: grpc.aio.AioRpcError) -> str:
        """Why the session ended on an error it will not resume from."""
        return stream_error_reason(
            error, resuming=self.resuming, session_id=self.session_id, where=self._connector.name
        )

    async def cancel(self, reason: str, grace_s: float) -> Ended | None:
        """Tell the daemon the session is cancelled; its SessionEnded if it comes in time."""
        stream = self._stream
        if stream is None:
            return None
        try:
            async with asyncio.timeout(grace_s):
                await stream.write(convert.cancel(reason))
                while True:
                    event = await stream.next()
                    if event.WhichOneof("event") == "ended":
                        return convert.ended_from_pb(event.ended)
        except (TimeoutError, grpc.aio.AioRpcError, ProtocolError, convert.ConversionError):
            return None  # cancelled on our side regardless; the daemon's word is a courtesy

    async def abandon(self, reason: str) -> None:
        """A client-side failure: tell the daemon why, without waiting for an answer."""
        stream = self._stream
        if stream is None:
            return
        try:
            async with asyncio.timeout(1.0):
                await stream.write(convert.cancel(reason))
        except (TimeoutError, grpc.aio.AioRpcError, ProtocolError):
            pass

    def _on_end(self, stream: SessionStream, error: BaseException | None) -> None:
        """The reader saw the stream end: nothing more may start until it is resumed."""
        if stream is not self._stream:
            return  # an old stream, closed on purpose
        if error is None:
            # The daemon finished the call: the session is over on its side (its
            # SessionEnded is queued), so the running action must stop now too.
            self._halt.trigger(HaltReason.DAEMON_ENDED, "the daemon ended the session")
            return
        why = describe(error) if isinstance(error, grpc.aio.AioRpcError) else "it closed"
        self._halt.trigger(HaltReason.LINK_LOST, f"the stream to the daemon ended ({why})")
        resumable = isinstance(error, grpc.aio.AioRpcError) and is_resumable(error)
        if resumable and self._resume_token:
            self._notify(LinkLost(why))
