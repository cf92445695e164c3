"""Counts how every call ends, by method and gRPC status code, into DaemonMetrics.

The outermost server interceptor: it sees the status the ErrorInterceptor chose
(an aborted call's code is on its context), authentication failures included, a
call the client cancelled (CANCELLED) or let run past its deadline
(DEADLINE_EXCEEDED), and methods nobody serves (UNIMPLEMENTED, all under one
``method="unknown"`` label: the name is the caller's, and a label per name
let anyone grow the daemon's memory and /metrics without limit). What gRPC
refuses before any handler runs (a message above --max-message-mb) is not seen.
Locate calls are also counted and timed here, whatever their status.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import grpc

from holodesk.daemon.metrics import DaemonMetrics
from holodesk.daemon.rpc.interceptor import aclose, wrap_behavior
from holodesk.proto.v1 import agent_pb2

# The server's deadline starts when it reads the call's timeout header, a little
# after the client's: a client whose deadline passed cancels while the server still
# has this long left (under load 2 of 40 such calls were counted CANCELLED at 0).
DEADLINE_SLACK_S = 0.25
# The label of every method the server has no handler for.
UNKNOWN_METHOD = "unknown"
LOCATE = "/" + agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name + "/Locate"


def method_label(method: str) -> str:
    """'/holodesk.v1.AgentService/Locate' -> 'holodesk.v1.AgentService/Locate'."""
    return method.lstrip("/")


def _code_of(context: Any, error: BaseException | None) -> str:
    if error is None or isinstance(error, grpc.aio.AbortError):
        code = context.code()
        if code is None:
            return "OK" if error is None else "UNKNOWN"
        return str(code.name)
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        remaining = context.time_remaining()
        if remaining is not None and remaining <= DEADLINE_SLACK_S:
            return "DEADLINE_EXCEEDED"
        return "CANCELLED"
    return "UNKNOWN"


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        method: str = handler_call_details.method
        handler = await continuation(handler_call_details)
        if handler is None:
            self.metrics.rpc_ended(UNKNOWN_METHOD, "UNIMPLEMENTED")
            return None
        return wrap_behavior(
            handler,
            partial(self._wrap_unary, method=method),
            partial(self._wrap_stream, method=method),
        )

    def _ended(self, method: str, context: Any, error: BaseException | None, start: float) -> None:
        code = _code_of(context, error)
        self.metrics.rpc_ended(method_label(method), code)
        if method == LOCATE:
            self.metrics.locate_ended(code, time.perf_counter() - start)

    def _wrap_unary(
        self, behavior: Callable[[Any, Any], Awaitable[Any]], method: str
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        async def wrapped(request: Any, context: Any) -> Any:
            start = time.perf_counter()
            if method == LOCATE and isinstance(request, agent_pb2.LocateRequest):
                self.metrics.frame_received("Locate", len(request.frame.data))
            try:
                response = await behavior(request, context)
            except BaseException as error:
                self._ended(method, context, error, start)
                raise
            self._ended(method, context, None, start)
            return response

        return wrapped

    def _wrap_stream(
        self, behavior: Callable[[Any, Any], AsyncIterator[Any]], method: str
    ) -> Callable[[Any, Any], AsyncIterator[Any]]:
        async def wrapped(request: Any, context: Any) -> AsyncIterator[Any]:
            start = time.perf_counter()
            responses = behavior(request, context)
            try:
                async for response in responses:
                    yield response
            except BaseException as error:
                self._ended(method, context, error, start)
                raise
            else:
                self._ended(method, context, None, start)
            finally:
                await aclose(responses)

        return wrapped
