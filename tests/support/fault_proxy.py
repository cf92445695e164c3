"""A TCP proxy on loopback that fails on command: the network between client and daemon.

    async with FaultProxy("127.0.0.1", daemon_port) as proxy:
        channel = grpc.aio.insecure_channel(proxy.address)
        ...
        await proxy.reset_all()      # RST every connection, mid-stream
        await proxy.drop_all()       # close every connection (FIN both ways)
        proxy.delay_s = 0.2          # add latency to every chunk, both directions
        proxy.blackhole = True       # keep connections open, forward nothing (half-open)
        proxy.refuse = True          # close new connections as soon as they arrive
        await proxy.silence_all()    # blackhole only the live connections (new ones work)

Synchronous code (a test that drives a client from its own thread, a scripted
daemon's script on the server's thread) uses ThreadedFaultProxy: the same proxy
on its own event loop in a thread, with blocking calls.

Bytes pass through unchanged otherwise; it knows nothing of gRPC or HTTP/2,
which is the point: the faults are the transport's, not a fake's.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

_T = TypeVar("_T")

_CHUNK = 64 * 1024


@dataclass(eq=False)  # hashed by identity: kept in a set
class _Link:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    # Forwards nothing more and never closes its peers itself (a pulled cable).
    silenced: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.delay_s = 0.0
        self.blackhole = False
        self.refuse = False
        # Connections accepted so far, refused ones included.
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

    async def silence_all(self) -> int:
        """Forward nothing more on the live connections (new ones work); returns how many."""
        live = [link for link in self._links if not link.silenced]
        for link in live:
            link.silenced = True
        return len(live)

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
        async with self._connected:
            self.accepted += 1
            self._connected.notify_all()
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

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link
    ) -> None:
        try:
            while True:
                data = await source.read(_CHUNK)
                if not data:
                    break
                if self.blackhole or link.silenced:
                    continue
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            # A silenced link stays for reset_all()/close(): its peers hear nothing, not
            # even a close. Otherwise one side ended: end the other (a real path would too).
            if not link.silenced:
                with contextlib.suppress(Exception):
                    sink.close()
                self._links.discard(link)


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class ThreadedFaultProxy:
    """A FaultProxy on its own event loop in a thread, for synchronous callers.

    Every fault is a blocking call, callable from any thread but the proxy's own.
    """

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.proxy = self._call(self._make(upstream_host, upstream_port))

    @staticmethod
    async def _make(host: str, port: int) -> FaultProxy:
        # Built on the proxy's loop: its Condition belongs to that loop.
        return await FaultProxy(host, port).start()

    def _call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    @property
    def target(self) -> str:
        return self.proxy.address

    @property
    def accepted(self) -> int:
        return self.proxy.accepted

    @property
    def refuse(self) -> bool:
        return self.proxy.refuse

    @refuse.setter
    def refuse(self, value: bool) -> None:
        self.proxy.refuse = value  # a plain flag the loop reads at each accept

    def reset(self) -> int:
        """RST every live connection, both sides; returns how many there were."""
        return self._call(self.proxy.reset_all())

    def drop(self) -> int:
        """Close every live connection cleanly, both sides; returns how many."""
        return self._call(self.proxy.drop_all())

    def blackhole(self) -> int:
        """Forward nothing more on the live connections (new ones work); returns how many."""
        return self._call(self.proxy.silence_all())

    def stop(self) -> None:
        async def shutdown() -> None:
            await self.proxy.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        self._call(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()
