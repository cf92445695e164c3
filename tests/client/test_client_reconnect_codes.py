"""Which stream errors the client resumes after: a dead link, never the daemon's answer."""

from __future__ import annotations

import grpc
import grpc.aio

from holodesk.client.reconnect import is_resumable
from tests.daemon.support import running_daemon, scripted_policy


def _transport_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    """What grpc core reports for a connection cut mid-frame: no trailing status."""
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


def test_grpcs_own_internal_on_a_torn_connection_is_resumed() -> None:
    assert is_resumable(_transport_error(grpc.StatusCode.INTERNAL, "Internal error from Core"))
    assert is_resumable(_transport_error(grpc.StatusCode.UNAVAILABLE, "Socket closed"))


async def test_the_daemons_own_internal_is_final() -> None:
    """The daemon's errors carry a google.rpc.Status: its INTERNAL is not retried."""
    async with running_daemon([scripted_policy([])]) as daemon:
        stream = daemon.stream()
        await stream.start()
        # An observation with no frame: INVALID_ARGUMENT, the daemon's own answer, with
        # its status; an INTERNAL of the daemon's is built the same way (interceptor.py).
        await stream.observe_nowait(None)
        error = await stream.error()
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert not is_resumable(error)
    internal = grpc.aio.AioRpcError(
        grpc.StatusCode.INTERNAL,
        grpc.aio.Metadata(),
        error.trailing_metadata(),
        "internal error: RuntimeError: the policy broke",
    )
    assert not is_resumable(internal)
