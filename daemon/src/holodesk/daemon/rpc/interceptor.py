"""Maps exceptions raised by servicers to precise gRPC statuses.

A grpc.aio server interceptor that wraps every method handler (unary and
streaming alike): a `HolodeskError` becomes its own status code, message and
google.rpc details (via grpcio-status); anything unexpected is logged with its
traceback and reported as INTERNAL naming the exception type, never a bare
INTERNAL. Cancellation and grpc's own abort signal pass through untouched.

It also owns decoding: a request that is not a valid protobuf message of the
method's type is INVALID_ARGUMENT naming the message type (gRPC's own
deserializer would report UNKNOWN or INTERNAL), for unary and streamed
requests alike.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, NoReturn

import grpc
from grpc_status import rpc_status

from holodesk.daemon.errors import HolodeskError, Internal, InvalidArgument

log = logging.getLogger(__name__)


async def abort_with(context: Any, error: HolodeskError) -> NoReturn:
    status = rpc_status.to_status(error.to_status())
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("context.abort returned")  # pragma: no cover


async def _report(context: Any, method: str, exc: Exception) -> NoReturn:
    if isinstance(exc, HolodeskError):
        log.info("%s -> %s: %s", method, exc.code.name, exc.message)
        await abort_with(context, exc)
    log.error("%s failed unexpectedly", method, exc_info=exc)
    await abort_with(context, Internal(exc))


_BEHAVIORS = ("unary_unary", "stream_unary", "unary_stream", "stream_stream")


def wrap_behavior(
    handler: Any,
    wrap_unary: Callable[[Callable[[Any, Any], Awaitable[Any]]], Any],
    wrap_stream: Callable[[Callable[[Any, Any], AsyncIterator[Any]]], Any],
) -> Any:
    """The method handler with its one behaviour wrapped, for every interceptor here:
    streaming handlers written as async generators by `wrap_stream`, everything else
    (unary ones, and the rarer context.write() style, which returns a coroutine) by
    `wrap_unary`."""
    for kind in _BEHAVIORS:
        behavior = getattr(handler, kind)
        if behavior is None:
            continue
        wrap = wrap_stream if inspect.isasyncgenfunction(behavior) else wrap_unary
        return handler._replace(**{kind: wrap(behavior)})
    return handler


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method: str = handler_call_details.method
        return wrap_behavior(
            _tolerant_decoding(handler),
            partial(_wrap_unary, method=method),
            partial(_wrap_stream, method=method),
        )


def _wrap_unary(
    behavior: Callable[[Any, Any], Awaitable[Any]], method: str
) -> Callable[[Any, Any], Awaitable[Any]]:
    async def wrapped(request: Any, context: Any) -> Any:
        try:
            return await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _report(context, method, exc)

    return wrapped


async def aclose(responses: AsyncIterator[Any]) -> None:
    """Close an inner response generator as soon as its wrapper closes (its cleanup
    must not wait for the garbage collector)."""
    close = getattr(responses, "aclose", None)
    if close is not None:
        await close()


def _wrap_stream(
    behavior: Callable[[Any, Any], AsyncIterator[Any]], method: str
) -> Callable[[Any, Any], AsyncIterator[Any]]:
    async def wrapped(request: Any, context: Any) -> AsyncIterator[Any]:
        responses = behavior(request, context)
        try:
            async for response in responses:
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _report(context, method, exc)
        finally:
            await aclose(responses)

    return wrapped


class _Undecodable:
    """Stands in for a request message that failed to decode."""

    def __init__(self, exc: Exception) -> None:
        self.error = InvalidArgument(
            "request", f"not a valid protobuf message ({type(exc).__name__}: {exc})"
        )


def _tolerant_decoding(handler: Any) -> Any:
    """Decode requests ourselves, so a corrupt message becomes INVALID_ARGUMENT."""
    decode = handler.request_deserializer
    if decode is None:
        return handler

    def tolerant(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as exc:
            return _Undecodable(exc)

    replaced = handler._replace(request_deserializer=tolerant)
    for kind in ("unary_unary", "unary_stream"):
        behavior = getattr(handler, kind)
        if behavior is not None:
            return replaced._replace(**{kind: _checked_request(behavior)})
    for kind in ("stream_unary", "stream_stream"):
        behavior = getattr(handler, kind)
        if behavior is not None:
            return replaced._replace(**{kind: _checked_requests(behavior)})
    return replaced


def _checked_request(behavior: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A single request: fail before the handler runs. Keeps the behavior's kind
    (coroutine function or async generator function), which the wrappers rely on."""
    if inspect.isasyncgenfunction(behavior):

        async def checked_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                raise request.error
            responses = behavior(request, context)
            try:
                async for response in responses:
                    yield response
            finally:
                await aclose(responses)

        return checked_stream

    async def checked(request: Any, context: Any) -> Any:
        if isinstance(request, _Undecodable):
            raise request.error
        return await behavior(request, context)

    return checked


def _checked_requests(behavior: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A request stream: the corrupt message raises where the handler reads it."""

    async def requests_of(iterator: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for request in iterator:
            if isinstance(request, _Undecodable):
                raise request.error
            yield request

    if inspect.isasyncgenfunction(behavior):

        async def checked_stream(iterator: Any, context: Any) -> AsyncIterator[Any]:
            responses = behavior(requests_of(iterator), context)
            try:
                async for response in responses:
                    yield response
            finally:
                await aclose(responses)

        return checked_stream

    async def checked(iterator: Any, context: Any) -> Any:
        return await behavior(requests_of(iterator), context)

    return checked
