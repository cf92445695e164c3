"""The desktop behind the MCP tools, opened when a tool first needs it.

An MCP host starts its stdio servers with a trimmed environment (the MCP Python
SDK passes only HOME, LOGNAME, PATH, SHELL, TERM and USER, plus the entry's
"env"), so DISPLAY or WAYLAND_DISPLAY may be missing. A server that opened the
desktop before answering `initialize` would die there, and the host would show
only "Connection closed": nobody learns why. So the server always initialises and
lists its tools; the desktop is opened at start when it can be, else at each tool
call until it opens (the X server may come up later), and until then every tool
that needs it answers with the platform layer's cause and fix and the host side
of the fix (what `holodesk mcp install` records, or the entry's "env").
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping

from holodesk.client.mcp.desktop import Desktop
from holodesk.client.safety import SafetySettings
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.session_env import DISPLAY_ENV, needs_display_env


class DesktopUnavailableError(Exception):
    """No desktop to act on; the message says why and how to fix it."""


def host_advice(environ: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """What to change on the MCP host's side, '' when the environment is not the
    likely cause (a display variable is set, or the OS needs none)."""
    env = os.environ if environ is None else environ
    if not needs_display_env(platform) or any(env.get(name, "").strip() for name in DISPLAY_ENV):
        return ""
    return (
        "holodesk mcp got neither DISPLAY nor WAYLAND_DISPLAY: MCP hosts start servers "
        "with only a few environment variables. Run `holodesk mcp install HOST` again "
        "from a terminal of this desktop (it records them), or add them to the server's "
        'entry in the host\'s configuration, e.g. "env": {"DISPLAY": ":0"}; then '
        "restart the host"
    )


class DesktopSource:
    """Opens the desktop once it can, and hands the same one to every tool."""

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        safety: SafetySettings,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self._open = open_backend
        self._safety = safety
        self._warn = warn or _to_stderr
        self._desktop: Desktop | None = None
        self._opening = asyncio.Lock()
        self._closed = False

    @property
    def opened(self) -> Desktop | None:
        """The desktop, if it is open."""
        return self._desktop

    async def get(self) -> Desktop:
        """The desktop, opened (with its emergency-stop hotkey) on first success;
        DesktopUnavailableError with the cause and the fix while it cannot be."""
        if self._desktop is not None:
            return self._desktop
        async with self._opening:
            if self._desktop is not None:
                return self._desktop
            if self._closed:
                raise DesktopUnavailableError("holodesk mcp is stopping")
            try:
                backend = await asyncio.to_thread(self._open)
            except PlatformError as error:
                raise DesktopUnavailableError(_unavailable(error)) from error
            desktop = Desktop(backend, self._safety)
            problem = await desktop.start_hotkey()
            if problem:
                self._warn(f"{problem}; stop it by ending the process")
            self._desktop = desktop
            return desktop

    async def try_open(self) -> None:
        """Open now if possible; else say why on stderr (the host's log) and serve on."""
        try:
            await self.get()
        except DesktopUnavailableError as error:
            self._warn(f"serving without a desktop for now: {error}")

    def close(self) -> None:
        """Close the desktop if it was opened; no later call opens one."""
        self._closed = True
        if self._desktop is not None:
            self._desktop.close()


def _unavailable(error: PlatformError) -> str:
    advice = host_advice()
    return f"{error}\n{advice}" if advice else str(error)


def _to_stderr(message: str) -> None:
    print(f"holodesk mcp: {message}", file=sys.stderr, flush=True)
