"""`holodesk mcp` serving: the desktop opened, its tools built, stdio or HTTP served.

Apart from command.py, which only parses (see its `run`), so the MCP SDK is
imported by the command that serves, not by every `holodesk` start.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from holodesk.client.backend_args import url_options
from holodesk.client.channel import ChannelError, check_settings
from holodesk.client.cli import command_error
from holodesk.client.credentials import CredentialsError
from holodesk.client.exit_codes import ExitCode
from holodesk.client.mcp.address import BindError, HttpAddress, check_bind, parse_http_address
from holodesk.client.mcp.opening import DesktopSource
from holodesk.client.mcp.tools import ToolContext, build_server
from holodesk.client.mcp.transport import serve_http, serve_stdio
from holodesk.client.render import Printer
from holodesk.client.run.command import _stopped_by_sigterm, session_options
from holodesk.platform.select import open_backend


def serve(args: argparse.Namespace, record_root: Path) -> int:
    """Serve until the host hangs up, a signal, or Ctrl-C; the exit code."""
    try:
        address = None
        if args.http is not None:
            address = parse_http_address(args.http)
            check_bind(address, args.allow_remote)
        # Progress of run_task sessions goes to stderr (stdout may be the protocol).
        options = session_options(args, Printer())
        if args.server:
            check_settings(args.server, options.channel)
        opening = url_options(args.backend, args.url)
    except (BindError, CredentialsError, ChannelError, ValueError) as error:
        return command_error("mcp", str(error))
    source = DesktopSource(lambda: open_backend(args.backend, **opening), options.safety)
    context = ToolContext(
        desktops=source,
        server=args.server or "",
        channel=options.channel,
        session=options,
        record_root=record_root,
    )
    server = build_server(context)
    try:
        # SIGTERM (a host, systemd, kill) ends the server as Ctrl-C does, through the
        # finally below (stdio: through serve_stdio's finish): nothing held stays held.
        asyncio.run(_stopped_by_sigterm(_serve_desktop(server, source, address)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    except BindError as error:
        return command_error("mcp", str(error))
    finally:
        source.close()
    return ExitCode.SUCCEEDED


async def _serve_desktop(
    server: MCPServer[Any], source: DesktopSource, address: HttpAddress | None
) -> None:
    """Serve, with the desktop opened first where it can be (and with it the
    emergency-stop hotkey, as `holodesk run` holds it); where it cannot, serve
    anyway: the tools say why (opening.py)."""
    await source.try_open()

    async def finish() -> None:
        # The cancelled tool calls (a run_task session among them) end first: each
        # holds the desktop's lock until it has released what it held.
        desktop = source.opened
        if desktop is None:
            source.close()
            return
        async with desktop.lock:
            await desktop.stop_hotkey()
            source.close()

    try:
        if address is None:
            await serve_stdio(server, finish)
        else:
            await serve_http(server, address)
    finally:
        desktop = source.opened
        if desktop is not None:
            await desktop.stop_hotkey()
