"""The MCP tools: look at the screen, act on it in screen pixels, locate, run a task.

Every tool is a thin translation: arguments become the client's own values
(holodesk.client.actions, a SessionOptions), which run through the same code as
`holodesk run`; a refusal or failure comes back as a tool error (is_error) whose
text says why, so the calling model can correct itself.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal

import grpc
import grpc.aio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from holodesk.client import actions as a
from holodesk.client.capture import CaptureError
from holodesk.client.channel import ChannelError, ChannelSettings, check_settings
from holodesk.client.mcp import tasks
from holodesk.client.mcp.desktop import Desktop, shrunk
from holodesk.client.mcp.grounding import locate_on_screen
from holodesk.client.mcp.opening import DesktopSource, DesktopUnavailableError
from holodesk.client.render import describe
from holodesk.client.session import SessionOptions
from holodesk.client.shown import shown
from holodesk.platform.base import MouseButton

SERVER_NAME = "holodesk"

Button = Literal["left", "right", "middle", "back", "forward"]
X = Annotated[int, Field(description="screen pixel column (as the screenshot shows it)")]
Y = Annotated[int, Field(description="screen pixel row (as the screenshot shows it)")]
Modifiers = Annotated[
    list[str], Field(description="keys held during the action, e.g. ['ctrl'] or ['shift']")
]

INSTRUCTIONS = (
    "Drives this computer's desktop through holodesk. Coordinates are screen pixels: "
    "take a screenshot, read the point off it (times its scale, if you asked for a "
    "smaller one) or ask locate, then click, type, press "
    "keys, scroll, drag or move. Every action passes the client's safety guard (denied "
    "key chords, rate limits, the fail-safe corner); a refused action is an error that "
    "says why. run_task hands a whole task to the holodesk daemon's agent instead."
)

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_ACTS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class ToolContext:
    """What the tools work with, fixed when `holodesk mcp` starts."""

    # The desktop, opened when a tool first needs it (see opening.py for why).
    desktops: DesktopSource
    # The daemon for locate and run_task ('' when none was configured).
    server: str
    channel: ChannelSettings
    # run_task's session settings: `holodesk run`'s flags (safety, display, policy, ...).
    session: SessionOptions
    # run_task records each session under this folder (and writes its report there).
    record_root: Path


def build_server(context: ToolContext) -> MCPServer[Any]:
    """An MCP server with holodesk's tools, bound to one desktop."""
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        title="holodesk",
        instructions=INSTRUCTIONS,
        version=version("holodesk-client"),
        log_level="WARNING",
    )

    async def open_desktop() -> Desktop:
        try:
            return await context.desktops.get()
        except DesktopUnavailableError as error:
            raise ToolError(str(error)) from error

    async def act(action: a.Action) -> dict[str, Any]:
        desktop = await open_desktop()
        async with desktop.lock:
            result = await desktop.act(action)
        if result.status is not a.ActionStatus.OK:
            raise ToolError(shown(f"{result.status.value}: {describe(action)}: {result.error}"))
        return {"status": "ok", "action": describe(action), "duration_ms": result.duration_ms}

    @server.tool(annotations=_READ_ONLY)
    async def screenshot(
        display: Annotated[
            str | None,
            Field(description="a display id from list_displays; omit for the whole desktop"),
        ] = None,
        max_width: Annotated[
            int, Field(ge=0, description="shrink to at most this wide (0: as captured)")
        ] = 0,
        max_height: Annotated[
            int, Field(ge=0, description="shrink to at most this high (0: as captured)")
        ] = 0,
    ) -> CallToolResult:
        """A PNG of the whole desktop or one display. As captured, image pixel (px, py)
        is screen pixel (origin_x + px, origin_y + py); shrunk, it is
        (origin_x + px * scale, origin_y + py * scale): actions take screen pixels."""
        desktop = await open_desktop()
        try:
            async with desktop.lock:
                shot = await desktop.screenshot(display)
        except CaptureError as error:
            raise ToolError(str(error)) from error
        png, width, height = await asyncio.to_thread(shrunk, shot, max_width, max_height)
        region = shot.region
        geometry = {
            "display": shot.display_id or "all",
            "origin_x": region.x,
            "origin_y": region.y,
            "width": region.width,
            "height": region.height,
            "image_width": width,
            "image_height": height,
            "scale": region.width / width,
        }
        return CallToolResult(
            content=[
                ImageContent(
                    type="image", data=base64.b64encode(png).decode(), mime_type="image/png"
                ),
                TextContent(type="text", text=json.dumps(geometry)),
            ],
            structured_content=geometry,
        )

    @server.tool(annotations=_READ_ONLY)
    async def list_displays() -> dict[str, Any]:
        """The displays of the desktop: id, bounds in screen pixels, scale, primary."""
        desktop = await open_desktop()
        async with desktop.lock:
            displays = await desktop.displays()
        return {
            "displays": [
                {
                    "id": d.display_id,
                    "x": d.bounds.x,
                    "y": d.bounds.y,
                    "width": d.bounds.width,
                    "height": d.bounds.height,
                    "scale_factor": d.scale_factor,
                    "primary": d.primary,
                }
                for d in displays
            ]
        }

    @server.tool(annotations=_ACTS)
    async def click(
        x: X,
        y: Y,
        button: Button = "left",
        count: Annotated[int, Field(ge=1, le=3, description="1, 2 (double) or 3")] = 1,
        modifiers: Modifiers | None = None,
    ) -> dict[str, Any]:
        """Click at a screen pixel."""
        point = a.FramePoint(x, y)
        return await act(
            a.Click(
                action_id="",
                point=point,
                button=MouseButton(button),
                count=count,
                modifiers=tuple(modifiers or ()),
            )
        )

    @server.tool(annotations=_ACTS)
    async def move(x: X, y: Y) -> dict[str, Any]:
        """Move the pointer to a screen pixel."""
        return await act(a.Move(action_id="", point=a.FramePoint(x, y)))

    @server.tool(annotations=_ACTS)
    async def type_text(
        text: Annotated[str, Field(description="any Unicode text; \\n presses Enter")],
    ) -> dict[str, Any]:
        """Type text into whatever has the keyboard focus."""
        return await act(a.TypeText(action_id="", text=text))

    @server.tool(annotations=_ACTS)
    async def key(
        keys: Annotated[
            str, Field(description="a key or chord joined by '+', e.g. 'enter', 'ctrl+c'")
        ],
    ) -> dict[str, Any]:
        """Press a key chord: the keys go down in order and come up in reverse."""
        names = [part.strip() for part in keys.split("+")] if keys.strip() != "+" else ["+"]
        if not all(names):
            raise ToolError(f"key chord {keys!r}: write key names joined by '+', e.g. 'ctrl+c'")
        return await act(a.KeyChord(action_id="", keys=tuple(names)))

    @server.tool(annotations=_ACTS)
    async def scroll(
        x: X,
        y: Y,
        dx: Annotated[int, Field(description="wheel notches; > 0 scrolls right")] = 0,
        dy: Annotated[int, Field(description="wheel notches; > 0 scrolls down")] = 0,
    ) -> dict[str, Any]:
        """Scroll the wheel with the pointer at a screen pixel."""
        return await act(a.Scroll(action_id="", point=a.FramePoint(x, y), dx=dx, dy=dy))

    @server.tool(annotations=_ACTS)
    async def drag(
        path: Annotated[
            list[tuple[int, int]],
            Field(min_length=2, description="screen pixels [[x, y], ...]: press, move, release"),
        ],
        button: Button = "left",
        modifiers: Modifiers | None = None,
        duration_ms: Annotated[int, Field(ge=0, description="0: the client's default")] = 0,
    ) -> dict[str, Any]:
        """Drag with a button held along a path of screen pixels."""
        return await act(
            a.Drag(
                action_id="",
                path=tuple(a.FramePoint(px, py) for px, py in path),
                button=MouseButton(button),
                modifiers=tuple(modifiers or ()),
                duration_ms=duration_ms,
            )
        )

    @server.tool(annotations=_READ_ONLY)
    async def locate(
        description: Annotated[str, Field(description="the element, e.g. 'the OK button'")],
        display: Annotated[
            str | None, Field(description="a display id; omit for the whole desktop")
        ] = None,
    ) -> dict[str, Any]:
        """Find an element on the screen through the holodesk daemon's Locate: the point
        to click and its box, in screen pixels (found: false when it is not there)."""
        if not description.strip():
            raise ToolError("the description is empty")
        server_address = _daemon(context, None)
        desktop = await open_desktop()
        try:
            async with desktop.lock:
                shot = await desktop.screenshot(display)
            return await locate_on_screen(
                server_address, context.channel, shot, description, policy=context.session.policy
            )
        except CaptureError as error:
            raise ToolError(str(error)) from error
        except grpc.aio.AioRpcError as error:
            raise ToolError(shown(_rpc_error(server_address, error))) from error

    @server.tool(annotations=_ACTS)
    async def run_task(
        task: Annotated[str, Field(description="what to do, in natural language")],
        server: Annotated[
            str | None,
            Field(description="HOST:PORT of the daemon; omit for the one holodesk mcp was given"),
        ] = None,
        max_steps: Annotated[int, Field(ge=0, description="0: the daemon's default")] = 0,
        *,
        ctx: Context,
    ) -> dict[str, Any]:
        """Hand a whole task to the holodesk daemon's agent, which sees and acts on this
        desktop until it is done (as `holodesk run` does); returns the outcome, the
        answer, every step and the path of the session's HTML report."""
        if not task.strip():
            raise ToolError("the task is empty")
        address = _daemon(context, server)
        desktop = await open_desktop()
        options = context.session
        if max_steps:
            options = dataclasses.replace(options, max_steps=max_steps)
        async with desktop.lock:
            if desktop.stopped:
                raise ToolError(desktop.stopped)
            async with desktop.hotkey_lent():
                return await tasks.run_task(
                    address,
                    task,
                    desktop.backend,
                    options,
                    context.record_root,
                    progress=ctx.report_progress,
                )

    return server


def _daemon(context: ToolContext, server: str | None) -> str:
    address = (server or context.server).strip()
    if not address:
        raise ToolError("no daemon address: start holodesk mcp with --server HOST:PORT")
    try:
        check_settings(address, context.channel)
    except ChannelError as error:
        raise ToolError(str(error)) from error
    return address


def _rpc_error(server: str, error: grpc.aio.AioRpcError) -> str:
    code = error.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return f"the daemon at {server} could not be reached ({code.name}): {error.details()}"
    return f"the daemon refused Locate ({code.name}): {error.details()}"
