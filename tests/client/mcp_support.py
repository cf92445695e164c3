"""Start a real `holodesk mcp` subprocess and talk to it with the MCP SDK's own client."""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_types import CallToolResult, ImageContent, TextContent
from PIL import Image


def holodesk_mcp(*flags: str) -> list[str]:
    """The command line of `holodesk mcp` in this environment."""
    return [sys.executable, "-m", "holodesk.client", "mcp", *flags]


@asynccontextmanager
async def stdio_session(
    display: str, errlog: Path, *flags: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with `holodesk mcp FLAGS` on `display`, over stdio."""
    command, *args = holodesk_mcp("--backend", "x11", *flags)
    params = StdioServerParameters(
        command=command, args=args, env={"DISPLAY": display, **(env or {})}
    )
    with errlog.open("w", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def structured(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured result (a dict), checked to agree with its text block."""
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


def image_of(result: CallToolResult) -> Image.Image:
    (block,) = [b for b in result.content if isinstance(b, ImageContent)]
    assert block.mime_type == "image/png"
    image = Image.open(io.BytesIO(base64.b64decode(block.data)))
    image.load()
    return image


def geometry_of(result: CallToolResult) -> dict[str, Any]:
    data = json.loads(text_of(result))
    assert isinstance(data, dict)
    return data
