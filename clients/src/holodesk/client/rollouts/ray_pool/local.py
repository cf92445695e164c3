"""LocalPool: RayPool's interface over environments in this process (run_rollouts).

What `holodesk rollouts` uses without --ray, and what a caller can start with
before it has a cluster: the same EnvironmentSpec factories (called here, with
the same names), the same async iterator, the same counts. Nothing is ever Lost
here: an environment that fails is an ERROR trajectory (as run_rollouts says),
and nothing can be killed for hanging (a thread cannot be), so `time_limit_s` is
refused rather than ignored; a session's own limits (max_steps, the daemon's
step timeout) still apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Self

from holodesk.client.generation import Sampling
from holodesk.client.rollouts.environments import Environment
from holodesk.client.rollouts.ray_pool.items import PoolCounts, PoolItem
from holodesk.client.rollouts.ray_pool.pool import EnvironmentSpec
from holodesk.client.rollouts.runner import ROLLOUT_OPTIONS, RewardFunction, run_rollouts
from holodesk.client.rollouts.staleness import RolloutStats, StaleAction, check_bound
from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory
from holodesk.client.session import SessionOptions


class LocalPool:
    def __init__(self, server: str, environments: Sequence[EnvironmentSpec]) -> None:
        if not environments:
            raise ValueError("a pool needs at least one environment spec")
        self._server = server
        self._specs = tuple(environments)
        self._environments: list[Environment] = []
        self.counts = PoolCounts()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def environment_names(self) -> list[str]:
        return [e.name for e in self._environments]

    async def start(self) -> None:
        for spec in self._specs:
            numbers = itertools.count(1)
            for _ in range(spec.count):
                self._environments.append(spec.factory(f"{spec.name}-{next(numbers)}"))
        try:
            await asyncio.gather(*(asyncio.to_thread(e.start) for e in self._environments))
        except BaseException:
            await self.close()
            raise

    def rollouts(
        self,
        tasks: Sequence[str | RolloutTask],
        *,
        n: int = 1,
        reward: RewardFunction | None = None,
        sampling: Sampling | None = None,
        policy: str = "",
        max_steps: int = 0,
        keep_frames: bool = False,
        options: SessionOptions = ROLLOUT_OPTIONS,
        retries: int = 0,
        time_limit_s: float | None = None,
        max_version_span: int | None = None,
        stale: StaleAction = "flag",
        stats: RolloutStats | None = None,
    ) -> AsyncIterator[PoolItem]:
        """As RayPool.rollouts; `retries` has nothing to retry here."""
        check_bound(max_version_span, stale)
        if time_limit_s is not None:
            raise ValueError(
                "a time limit needs environments that can be killed: use the Ray pool "
                "(in this process, bound a session with max_steps or the daemon's step timeout)"
            )
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, got {retries}")
        if n < 1:
            raise ValueError(f"n must be 1 or more, got {n}")
        return self._run(
            tasks,
            n=n,
            reward=reward,
            sampling=sampling,
            policy=policy,
            max_steps=max_steps,
            keep_frames=keep_frames,
            options=options,
            max_version_span=max_version_span,
            stale=stale,
            stats=stats,
        )

    async def _run(
        self,
        tasks: Sequence[str | RolloutTask],
        *,
        stale: StaleAction,
        n: int,
        reward: RewardFunction | None,
        sampling: Sampling | None,
        policy: str,
        max_steps: int,
        keep_frames: bool,
        options: SessionOptions,
        max_version_span: int | None,
        stats: RolloutStats | None,
    ) -> AsyncIterator[PoolItem]:
        finished: asyncio.Queue[Trajectory] = asyncio.Queue()
        running = asyncio.create_task(
            run_rollouts(
                self._server,
                tasks,
                self._environments,
                n=n,
                sampling=sampling,
                reward=reward,
                policy=policy,
                max_steps=max_steps,
                keep_frames=keep_frames,
                options=options,
                on_trajectory=finished.put_nowait,
                max_version_span=max_version_span,
                stale=stale,
                stats=stats,
            )
        )
        try:
            while True:
                getting = asyncio.create_task(finished.get())
                await asyncio.wait({getting, running}, return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await getting
                    if finished.empty():
                        running.result()  # raises what run_rollouts raised
                        return
                    continue
                trajectory = getting.result()
                self.counts.done += 1
                if not (trajectory.stale and stale == "drop"):
                    yield trajectory
        finally:
            if not running.done():
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running

    async def close(self) -> None:
        environments, self._environments = self._environments, []
        errors = []
        for environment in environments:
            try:
                await asyncio.to_thread(environment.close)
            except Exception as error:
                errors.append(error)
        if errors:
            raise errors[0]
