"""A TCP proxy on loopback that fails on command: the network between client and daemon.

    async with FaultProxy("127.0.0.1", daemon_port) as proxy:
        channel = grpc.aio.insecure_channel(proxy.address)
        ...
        await proxy.reset_all()      # RST every connection, mid-stream
        await proxy.drop_all()       # close every connection (FIN both ways)
        proxy.delay_s = 0.2          # add latency to every chunk, both directions
        proxy.blackhole = True       # keep connections open, forward nothing (half-open)
        proxy.refuse = True          # close new connections as soon as they arrive

Bytes pass through unchanged otherwise; it knows nothing of gRPC or HTTP/2,
which is the point: the faults are the transport's, not a fake's.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass, field
from types import TracebackType

_CHUNK = 64 * 1024


@dataclass(eq=False)  # hashed by identity: kept in a set
class _Link:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.delay_s = 0.0
        self.blackhole = False
        self.refuse = False
        self.accepted = 0
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None
        self._connected = asyncio.Condition()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the proxy first"
        sock = self._server.sockets[0]
        return int(sock.getsockname()[1])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._links)

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self.reset_all()
        if self._server is not None:
            await self._server.wait_closed()

    async def wait_connections(self, count: int) -> None:
        """Until at least `count` connections were accepted in total."""
        async with self._connected:
            await self._connected.wait_for(lambda: self.accepted >= count)

    async def reset_all(self) -> int:
        """Abort every connection with a TCP RST on both sides; returns how many."""
        links = list(self._links)
        for link in links:
            for writer in (link.client, link.upstream):
                _reset(writer)
        await self._reap(links)
        return len(links)

    async def drop_all(self) -> int:
        """Close every connection in an orderly way (FIN), mid-stream or not."""
        links = list(self._links)
        for link in links:
            for writer in (link.client, link.upstream):
                writer.close()
        await self._reap(links)
        return len(links)

    async def _reap(self, links: list[_Link]) -> None:
        for link in links:
            for task in link.tasks:
                task.cancel()
            await asyncio.gather(*link.tasks, return_exceptions=True)
            self._links.discard(link)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refuse:
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
        except OSError:
            _reset(writer)
            return
        link = _Link(writer, up_writer)
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]
        self._links.add(link)
        async with self._connected:
            self.accepted += 1
            self._connected.notify_all()

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link
    ) -> None:
        try:
            while True:
                data = await source.read(_CHUNK)
                if not data:
                    break
                if self.blackhole:
                    continue
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            # One side ended: end the other (a real network path would too).
            with contextlib.suppress(Exception):
                sink.close()
            self._links.discard(link)


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
