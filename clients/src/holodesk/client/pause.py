"""Pausing a session from outside it (the tray's Pause): the session finishes the
batch it is executing, then waits before capturing the next frame, so the daemon gets
nothing to decide on and no new action starts until resume()."""

from __future__ import annotations

import asyncio
import threading


class PauseGate:
    """Thread-safe: pause() and resume() may be called from any thread (a tray menu)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paused = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            # The waiter's loop may have closed (session over): nothing left to wake.
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    async def wait_resumed(self) -> None:
        """Returns at once when running; otherwise when resume() is called (or the
        caller is cancelled: a stop while paused ends the session at once)."""
        with self._lock:
            if not self._paused:
                return
            event = asyncio.Event()
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()
