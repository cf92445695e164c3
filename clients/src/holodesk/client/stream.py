"""The RunSession call, read by a background task.

grpc.aio cancels the whole RPC when a coroutine awaiting call.read() or
call.write() is cancelled. A Ctrl-C must still be able to send CancelSession and
read SessionEnded, so reads happen in a task of their own and writes are
shielded; only close() ends the call.

The reader also reports the end of the stream at once (`on_end`), so the
session can stop acting the moment its stream dies, even mid-batch, and hands
SessionHeld notices (an operator holds the session, or lets it go) to `on_held`
as they come: they answer nothing and may come between any two messages, so the
conversation never sees them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc


class ProtocolError(Exception):
    """The daemon broke the session protocol, or closed the stream without ending it."""


_EOF = object()


class SessionStream:
    def __init__(
        self,
        channel: grpc.aio.Channel,
        on_end: Callable[[BaseException | None], None] | None = None,
        on_held: Callable[[agent_pb2.SessionHeld], None] | None = None,
    ) -> None:
        """`on_end(error)`: the stream ended (error None: the daemon closed it);
        `on_held(notice)`: a SessionHeld came."""
        self._on_end = on_end
        self._on_held = on_held
        stub = agent_pb2_grpc.AgentServiceStub(channel)
        self._call: Any = stub.RunSession()
        self._events: asyncio.Queue[object] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read_loop(), name="holodesk-session-reader")
        self._write_task: asyncio.Task[None] | None = None

    async def _read_loop(self) -> None:
        try:
            while True:
                message = await self._call.read()
                if message is grpc.aio.EOF:
                    self._events.put_nowait(_EOF)
                    self._ended(None)
                    return
                if message.WhichOneof("event") == "held":
                    if self._on_held is not None:
                        self._on_held(message.held)
                    continue
                self._events.put_nowait(message)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # handed to whoever reads next
            self._events.put_nowait(error)
            self._ended(error)

    def _ended(self, error: BaseException | None) -> None:
        if self._on_end is not None:
            self._on_end(error)

    async def next(self) -> agent_pb2.RunSessionResponse:
        item = await self._events.get()
        if isinstance(item, BaseException):
            # Keep it for later readers too (e.g. the cancel path after an abort).
            self._events.put_nowait(item)
            raise item
        if item is _EOF:
            self._events.put_nowait(item)
            raise ProtocolError("the daemon closed the stream without ending the session")
        assert isinstance(item, agent_pb2.RunSessionResponse)
        return item

    async def write(self, request: agent_pb2.RunSessionRequest) -> None:
        if self._write_task is not None and not self._write_task.done():
            # A write interrupted by cancellation is still in flight; gRPC allows one at a time.
            await asyncio.wait([self._write_task])
        self._write_task = asyncio.create_task(self._write(request))
        await asyncio.shield(self._write_task)

    async def _write(self, request: agent_pb2.RunSessionRequest) -> None:
        try:
            await self._call.write(request)
        except asyncio.InvalidStateError:
            # grpc.aio raises this for a write after the RPC finished, whatever its
            # status; the status is the news, so surface it as the read side would.
            call = self._call
            code = await call.code()
            if code != grpc.StatusCode.OK:
                raise grpc.aio.AioRpcError(
                    code,
                    await call.initial_metadata(),
                    await call.trailing_metadata(),
                    await call.details(),
                    await call.debug_error_string(),
                ) from None
            raise ProtocolError("the daemon closed the stream without ending the session") from None

    async def close(self, grace_s: float = 1.0) -> None:
        """Half-close, give the daemon `grace_s` to finish the call, then end it."""
        if self._write_task is not None and not self._write_task.done():
            await asyncio.wait([self._write_task], timeout=grace_s)
        writes_idle = self._write_task is None or self._write_task.done()
        if writes_idle and not self._call.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._call.done_writing(), grace_s)
            await asyncio.wait([self._reader], timeout=grace_s)
        if not self._call.done():
            self._call.cancel()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        if self._write_task is not None:
            self._write_task.cancel()
            await asyncio.gather(self._write_task, return_exceptions=True)
