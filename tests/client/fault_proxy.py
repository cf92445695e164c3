"""A TCP proxy on loopback whose connections a test breaks on purpose.

Client -> proxy (127.0.0.1:0) -> upstream. The proxy runs its own event loop in a
thread, so a test (or a scripted daemon's script, on the server's thread) can
reset, drop or silence every live connection at the exact moment it wants:

- reset():     abort both sides with a TCP RST (SO_LINGER 0), like a crashed peer
- drop():      close both sides cleanly (FIN), like a NAT or load balancer idling out
- blackhole(): keep the connections open but forward nothing more, like a cable
               pulled: only keepalive can notice
- refuse:      while set, new connections are reset the moment they arrive
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

_CHUNK = 64 * 1024


@dataclass
class _Link:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    silenced: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._links: list[_Link] = []
        self._server: asyncio.Server | None = None
        self.refuse = False
        # Connections accepted so far (refused ones included).
        self.accepted = 0
        self.port: int = self._call(self._start())

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _call(self, coroutine: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)  # type: ignore[arg-type]

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.refuse:
            _abort(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            _abort(writer)
            return
        link = _Link(writer, up_writer)
        self._links.append(link)
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link
    ) -> None:
        try:
            while data := await source.read(_CHUNK):
                if link.silenced:
                    continue  # swallowed: the peer hears nothing, not even a close
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not link.silenced:
                _close(sink)

    # -- faults (callable from any thread) --------------------------------------------------

    def reset(self) -> int:
        """RST every live connection, both sides; returns how many there were."""
        return int(self._call(self._each(_abort)))

    def drop(self) -> int:
        """Close every live connection cleanly, both sides; returns how many."""
        return int(self._call(self._each(_close)))

    def blackhole(self) -> int:
        """Forward nothing more on the live connections (new ones work); returns how many."""

        async def silence() -> int:
            live = [link for link in self._links if not link.silenced]
            for link in live:
                link.silenced = True
            return len(live)

        return int(self._call(silence()))

    async def _each(self, action: Any) -> int:
        links, self._links = self._links, []
        for link in links:
            link.silenced = True  # the pumps must not close them gracefully first
            action(link.client)
            action(link.upstream)
        return len(links)

    def stop(self) -> None:
        async def shutdown() -> None:
            await self._each(_abort)
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        self._call(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()


def _abort(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
