"""Maps exceptions raised by servicers to precise gRPC statuses.

A grpc.aio server interceptor that wraps every method handler (unary and
streaming alike): a `HolodeskError` becomes its own status code, message and
google.rpc details (via grpcio-status); anything unexpected is logged with its
traceback and reported as INTERNAL naming the exception type, never a bare
INTERNAL. Cancellation and grpc's own abort signal pass through untouched.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn

import grpc
from grpc_status import rpc_status

from holodesk.daemon.errors import HolodeskError, Internal

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
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=_wrap_unary(handler.unary_unary, method))
        if handler.stream_unary is not None:
            return handler._replace(stream_unary=_wrap_unary(handler.stream_unary, method))
        # Streaming handlers written as async generators are wrapped; the rarer
        # context.write() style returns a coroutine and is wrapped like a unary one.
        for kind in ("unary_stream", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is None:
                continue
            if inspect.isasyncgenfunction(behavior):
                return handler._replace(**{kind: _wrap_stream(behavior, method)})
            return handler._replace(**{kind: _wrap_unary(behavior, method)})
        return handler


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
            # Close the inner generator now (its cleanup must not wait for GC).
            aclose = getattr(responses, "aclose", None)
            if aclose is not None:
                await aclose()

    return wrapped
