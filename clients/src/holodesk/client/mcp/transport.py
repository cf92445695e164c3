"""How the MCP server is reached: stdio (a host starts it) or streamable HTTP.

Streamable HTTP binds loopback unless told otherwise, like holodeskd: the tools
drive this desktop, and the SDK's server has no authentication of its own, so a
non-loopback address is refused without an explicit `--allow-remote`. The
socket is bound before the server starts, so port 0 works and the address
printed (on stderr) is the real one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from holodesk.client.mcp.address import HTTP_PATH, BindError, HttpAddress


async def serve_stdio(server: MCPServer[Any], finish: Callable[[], Awaitable[None]]) -> None:
    """Serve until the host closes stdin; on SIGTERM or SIGINT, cancel what runs,
    await `finish` (release input, close the backend) and exit the process at once.

    The SDK reads stdin on a thread that nothing can interrupt while the host keeps
    the pipe open, so waiting for it to end (as asyncio.run does) would never end."""
    loop = asyncio.get_running_loop()
    serving = asyncio.ensure_future(server.run_stdio_async())
    signalled = asyncio.Event()
    installed: list[signal.Signals] = []
    for number in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(number, signalled.set)
        except (NotImplementedError, RuntimeError):  # Windows' loops take none
            continue
        installed.append(number)
    waiter = asyncio.ensure_future(signalled.wait())
    try:
        await asyncio.wait({serving, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
    if serving.done():
        waiter.cancel()
        serving.result()
        return
    serving.cancel()
    await finish()
    sys.stderr.flush()
    os._exit(0)


async def serve_http(
    server: MCPServer[Any], address: HttpAddress, *, announce: TextIO | None = None
) -> None:
    """Serve until cancelled; prints `holodesk mcp: serving http://HOST:PORT/mcp`."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host, address.port))
    except OSError as error:
        sock.close()
        raise BindError(f"cannot listen on {address.host}:{address.port}: {error}") from error
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=address.host,
        transport_security=_security(address, port),
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    shown_host = f"[{address.host}]" if family == socket.AF_INET6 else address.host
    print(
        f"holodesk mcp: serving http://{shown_host}:{port}{HTTP_PATH}",
        file=announce or sys.stderr,
        flush=True,
    )
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


def _security(address: HttpAddress, port: int) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback server: only loopback Host headers (a
    web page elsewhere cannot reach the desktop through the user's browser)."""
    if not address.loopback:
        return None  # --allow-remote: the operator chose who may reach it
    hosts = [f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")]
    origins = [f"http://{h}" for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
