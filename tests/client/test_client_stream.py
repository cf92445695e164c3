"""SessionStream: a write after the RPC failed reports the RPC's status."""

from __future__ import annotations

import socket

import grpc
import grpc.aio
import pytest

from holodesk.client import convert
from holodesk.client.channel import open_channel
from holodesk.client.stream import SessionStream


async def test_write_after_the_call_failed_raises_its_status() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with open_channel(f"127.0.0.1:{port}") as channel:
        stream = SessionStream(channel)
        with pytest.raises(grpc.aio.AioRpcError) as read_error:
            await stream.next()
        assert read_error.value.code() == grpc.StatusCode.UNAVAILABLE
        # The call is over now; grpc.aio itself would say only "RPC already finished".
        with pytest.raises(grpc.aio.AioRpcError) as write_error:
            await stream.write(convert.cancel("bye"))
        assert write_error.value.code() == grpc.StatusCode.UNAVAILABLE
        assert write_error.value.details() == read_error.value.details()
        await stream.close()
