"""`holodesk mcp` started the way MCP hosts start servers: with almost no environment.

The MCP Python SDK's stdio client gives a child only HOME, LOGNAME, PATH, SHELL,
TERM and USER (plus the entry's "env"), so DISPLAY, WAYLAND_DISPLAY and the rest
of the desktop session's variables are gone. The server must still initialise and
list its tools, and a tool must say why it cannot reach the desktop and how to fix
it; `holodesk mcp install`, run from a shell of the desktop, records what the server
needs to find it. Every server here is a real subprocess launched by the SDK's own
client with its default environment; the desktop is a real Xvfb.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment

from holodesk.client.cli import main
from holodesk.platform.session_env import SESSION_ENV

from .mcp_support import holodesk_mcp, image_of, text_of

pytestmark = [pytest.mark.x11]

TOOLS = {"screenshot", "list_displays", "click", "type_text", "key", "locate", "run_task"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own (the SDK passes HOME on): no real configuration read
    or written. No desktop variable but those a test sets itself."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    monkeypatch.chdir(folder)
    for name in SESSION_ENV:
        monkeypatch.delenv(name, raising=False)
    return folder


@asynccontextmanager
async def launched(
    command: str, args: list[str], env: dict[str, str] | None, errlog: Path
) -> AsyncIterator[ClientSession]:
    """An initialised session with a server the SDK started with its default
    environment (merged under `env`, as it does for a host's entry)."""
    params = StdioServerParameters(command=command, args=args, env=env)
    with errlog.open("w", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def test_the_sdk_default_environment_has_no_display() -> None:
    """The premise: what the SDK passes a child holds no desktop variable at all."""
    assert not set(get_default_environment()) & set(SESSION_ENV)


async def test_without_a_display_the_server_initialises_and_tools_say_why(
    home: Path, xvfb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This test process has DISPLAY (the Xvfb); the SDK's default environment drops it.
    monkeypatch.setenv("DISPLAY", xvfb)
    command, *args = holodesk_mcp()
    async with launched(command, args, None, tmp_path / "mcp.err") as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names >= TOOLS
        for tool, arguments in (
            ("screenshot", {}),
            ("list_displays", {}),
            ("click", {"x": 5, "y": 5}),
        ):
            result = await session.call_tool(tool, arguments)
            assert result.is_error, tool
            message = text_of(result)
            # The cause, the platform layer's fix, and the MCP host's side of it.
            assert "DISPLAY is not set" in message, message
            assert "holodesk mcp install" in message, message
            assert '"env"' in message, message
    assert "DISPLAY is not set" in (tmp_path / "mcp.err").read_text()


async def test_install_records_the_desktop_so_the_host_started_server_reaches_it(
    home: Path,
    xvfb: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DISPLAY", xvfb)
    monkeypatch.setenv("XAUTHORITY", str(home / ".Xauthority"))
    assert main(["mcp", "install", "cursor"]) == 0
    path = home / ".cursor" / "mcp.json"
    first = capsys.readouterr().out
    assert first.startswith(f"added 'holodesk' to {path}"), first
    assert "DISPLAY" in first
    entry: dict[str, Any] = json.loads(path.read_text())["mcpServers"]["holodesk"]
    assert entry["env"] == {"DISPLAY": xvfb, "XAUTHORITY": str(home / ".Xauthority")}

    # A second install replaces the entry and says so.
    assert main(["mcp", "install", "cursor"]) == 0
    again = capsys.readouterr().out
    assert again.startswith(f"updated 'holodesk' in {path}"), again

    # An explicit --env wins over (and adds to) what the shell has.
    assert main(["mcp", "install", "cursor", "--env", "DISPLAY=:7", "--env", "A=b"]) == 0
    capsys.readouterr()
    entry = json.loads(path.read_text())["mcpServers"]["holodesk"]
    assert entry["env"] == {"DISPLAY": ":7", "XAUTHORITY": str(home / ".Xauthority"), "A": "b"}
    assert main(["mcp", "install", "cursor"]) == 0
    capsys.readouterr()
    entry = json.loads(path.read_text())["mcpServers"]["holodesk"]

    # Started as the host starts it: the SDK's default environment plus the entry's.
    monkeypatch.delenv("XAUTHORITY")  # Xvfb takes no cookie: the file need not exist
    entry["env"].pop("XAUTHORITY")
    async with launched(entry["command"], entry["args"], entry["env"], tmp_path / "e") as session:
        shot = await session.call_tool("screenshot", {})
        assert not shot.is_error, text_of(shot)
        assert image_of(shot).size == (1280, 800)


def test_install_without_a_desktop_says_what_the_server_will_lack(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "install", "cursor"]) == 0
    out = capsys.readouterr().out
    assert "no DISPLAY or WAYLAND_DISPLAY" in out, out
    assert "--env DISPLAY=" in out, out
    entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["holodesk"]
    assert entry["env"] == {}
    assert main(["mcp", "install", "cursor", "--env", "nonsense"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
