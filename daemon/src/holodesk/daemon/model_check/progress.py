"""What a person watches while `model check` waits: a countdown, then a progress bar.

A server that is still loading a 12B checkpoint takes minutes to answer; a
silent command then reads as hung. While the engine starts, a rich status line
counts down the engine's own start timeout (the openai engine keeps retrying a
server that is not up yet until then) or, for an engine with no deadline (a
model loading in process), counts the seconds spent. The display refreshes
every quarter second; the engine's start is awaited, never polled for.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable

from rich.console import Console

REFRESH_S = 0.25


def countdown_text(what: str, elapsed_s: float, timeout_s: float | None) -> str:
    if timeout_s is None or timeout_s <= 0:
        return f"starting {what}: {elapsed_s:.0f} s"
    left = max(0.0, timeout_s - elapsed_s)
    return f"waiting for {what}: {left:.0f} s left of {timeout_s:.0f} s"


async def with_countdown(
    start: Awaitable[None], console: Console, what: str, timeout_s: float | None
) -> None:
    """Await `start`, showing a countdown; its exception, if any, propagates."""
    task = asyncio.ensure_future(start)
    began = time.monotonic()
    try:
        with console.status(countdown_text(what, 0.0, timeout_s)) as status:
            while not task.done():
                # Only the display's refresh: `task` finishing ends the wait at once.
                await asyncio.wait({task}, timeout=REFRESH_S)
                status.update(countdown_text(what, time.monotonic() - began, timeout_s))
    finally:
        if not task.done():  # we were cancelled: so is the start
            task.cancel()
    await task
