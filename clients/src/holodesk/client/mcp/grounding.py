"""locate: find a described element on the screen through the daemon's Locate RPC.

The screenshot goes to the daemon as `holodesk locate` sends an image file
(holodesk.client.locate.locate), at one image pixel per screen pixel, so the point and
box that come back are moved into screen pixels by the screenshot's origin alone:
exactly the coordinates the click tool takes.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from holodesk.client.channel import ChannelSettings, open_channel
from holodesk.client.frames import SentFrame
from holodesk.client.locate.locate import LoadedImage, locate
from holodesk.client.locations import Location
from holodesk.client.mcp.desktop import Screenshot
from holodesk.values.encoding import ImageEncoding


async def locate_on_screen(
    server: str,
    settings: ChannelSettings,
    shot: Screenshot,
    description: str,
    *,
    policy: str = "",
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    """{found, x, y, box} in screen pixels (AioRpcError when the daemon refuses)."""
    region = shot.region
    frame = SentFrame(
        frame_id=uuid.uuid4().hex,
        width=region.width,
        height=region.height,
        encoding=ImageEncoding.PNG,
        data=shot.png,
        display_id=shot.display_id,
        source=region,
        scale_factor=1.0,
        captured_at=datetime.now(UTC),
    )
    image = LoadedImage(Path(f"screen-{shot.display_id or 'all'}.png"), frame)
    channel = open_channel(server, settings)
    try:
        (found,) = await locate(channel, image, [description], policy=policy, timeout_s=timeout_s)
    finally:
        await channel.close()
    return on_screen(found, shot)


def on_screen(found: Location, shot: Screenshot) -> dict[str, Any]:
    """The location, moved from screenshot pixels to screen pixels."""
    ox, oy = shot.region.x, shot.region.y
    result: dict[str, Any] = {"description": found.description, "found": found.found}
    if found.found and found.x is not None and found.y is not None:
        result["x"] = round(found.x + ox)
        result["y"] = round(found.y + oy)
    if found.box is not None:
        box = found.box
        result["box"] = {"x": box.x + ox, "y": box.y + oy, "width": box.width, "height": box.height}
    return result
