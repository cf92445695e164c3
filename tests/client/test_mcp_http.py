"""`holodesk mcp --http`: streamable HTTP on loopback, reached by the SDK's own client.

A real `holodesk mcp` subprocess binds 127.0.0.1:0 and prints the address it got;
the MCP SDK's streamable HTTP client lists its tools and takes a screenshot of
the session's Xvfb. A non-loopback bind is refused without --allow-remote, as
holodeskd refuses one without TLS, and a request naming another Host is refused
(DNS rebinding: a web page cannot reach the desktop through the user's browser).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from holodesk.platform.processes import stop_process

from .mcp_support import holodesk_mcp, image_of, text_of

pytestmark = pytest.mark.x11

SERVING = re.compile(r"serving (http://127\.0\.0\.1:(\d+)/mcp)")


@pytest.fixture
def http_server(xvfb: str) -> Iterator[str]:
    """A `holodesk mcp --http 127.0.0.1:0` on the Xvfb; yields its URL."""
    process = subprocess.Popen(
        holodesk_mcp("--backend", "x11", "--http", "127.0.0.1:0"),
        env={**os.environ, "DISPLAY": xvfb},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        said: list[str] = []
        for line in process.stderr:  # until it says where it listens (or exits)
            said.append(line)
            found = SERVING.search(line)
            if found:
                break
        else:
            raise AssertionError(f"holodesk mcp exited {process.wait()}: {''.join(said)}")
        yield found.group(1)
        process.terminate()  # as systemd or a host stops it: a clean exit, not -15
        assert process.wait() == 0
    finally:
        stop_process(process)


async def test_tools_are_listed_and_a_screenshot_taken_over_streamable_http(
    http_server: str,
) -> None:
    async with (
        streamable_http_client(http_server) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"screenshot", "click", "key", "locate", "run_task"} <= names
        shot = await session.call_tool("screenshot", {})
        assert not shot.is_error, text_of(shot)
        assert image_of(shot).size == (1280, 800)


def _post(url: str, host: str) -> int:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(initialize).encode(),
        headers={
            "Host": host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


async def test_a_request_for_another_host_is_refused(http_server: str) -> None:
    port = SERVING.search(f"serving {http_server}")
    assert port is not None
    own = await asyncio.to_thread(_post, http_server, f"127.0.0.1:{port.group(2)}")
    assert own == 200
    rebound = await asyncio.to_thread(_post, http_server, f"attacker.example:{port.group(2)}")
    assert rebound >= 400


@pytest.mark.parametrize("address", ["0.0.0.0:0", "192.0.2.10:8765", "[::]:0"])
def test_a_non_loopback_bind_is_refused_without_allow_remote(xvfb: str, address: str) -> None:
    done = subprocess.run(
        holodesk_mcp("--backend", "x11", "--http", address),
        env={**os.environ, "DISPLAY": xvfb},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "is not a loopback address" in done.stderr
    assert "--allow-remote" in done.stderr
    assert "serving" not in done.stderr


def test_sigterm_ends_the_stdio_server_cleanly(xvfb: str) -> None:
    """A host (or systemd) that terminates the server gets a clean exit, not -15."""
    process = subprocess.Popen(
        holodesk_mcp("--backend", "x11"),
        env={**os.environ, "DISPLAY": xvfb},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        process.stdin.write(json.dumps(initialize) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 1
        assert answer["result"]["serverInfo"]["name"] == "holodesk"
        process.terminate()
        assert process.wait() == 0
    finally:
        stop_process(process)
