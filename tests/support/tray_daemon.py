"""A real daemon on 127.0.0.1 for the tray's end-to-end tests, whose scripted model
(holo1.5 format, through the real dialect) clicks, then watches for a long while:
long enough to pause, resume and stop it from the tray's menu."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import RunningServer, serve

GUARD_S = 30.0
# 600 waits of 0.1 s: a minute at least, far more than a test takes to stop it.
_WATCHING = 600


def watching_script(click_at: tuple[int, int] | None = None) -> list[str]:
    """Outputs that click `click_at` (screen pixels: the frame is the screen) first
    when given, then wait a tenth of a second at each step."""
    wait = {"thought": "watch", "action": {"action": "wait", "seconds": 0.1}}
    outputs = [json.dumps(wait)] * _WATCHING
    if click_at is not None:
        x, y = click_at
        click = {"thought": "press OK", "action": {"action": "click", "x": x, "y": y}}
        outputs.insert(0, json.dumps(click))
    return outputs


@asynccontextmanager
async def scripted_daemon(outputs: list[str]) -> AsyncIterator[RunningServer]:
    policy = ModelPolicy(get_dialect("holo1.5"), ScriptedEngine(outputs), name="scripted")
    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        await asyncio.wait_for(asyncio.shield(running.policies_started), GUARD_S)
        yield running
