"""The one thread every call into a session's platform backend runs on, in order.

OS input APIs can be thread-affine (per-thread DPI awareness on Windows), and a
release queued behind a running action must run after it. A call survives the
coroutine that awaited it being cancelled: `settle` gives it time to finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class BackendThread:
    def __init__(self, grace_s: float) -> None:
        # How long settle() and within_grace() wait for a call before giving up on it.
        self._grace_s = grace_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holodesk-backend")
        self._pending: asyncio.Future[Any] | None = None

    @property
    def last_call(self) -> asyncio.Future[Any] | None:
        """The latest call made through `run` (done or not), None before the first."""
        return self._pending

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run on the backend thread; if we are cancelled, it still completes (see settle)."""
        future = asyncio.get_running_loop().run_in_executor(self._pool, function, *args)
        self._pending = future
        return await asyncio.shield(future)

    async def settle(self) -> None:
        """Give the running call (a halt is set) time to finish."""
        if self._pending is not None and not self._pending.done():
            await asyncio.wait([self._pending], timeout=self._grace_s)

    async def within_grace(self, function: Callable[[], T]) -> tuple[bool, T | None]:
        """Run after any running call; (False, None) when it did not finish in time."""
        future = asyncio.get_running_loop().run_in_executor(self._pool, function)
        done, _ = await asyncio.wait([future], timeout=self._grace_s)
        return (True, future.result()) if done else (False, None)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)
