"""RayPool: environments as Ray actors on the nodes that host desktops.

One actor per environment (actor.py), placed by the Ray resources or node labels
the caller names (EnvironmentSpec), never detached: Ray ends them with the
driver's job, and their reaper then stops their desktops. The driver hands a
rollout to whichever environment is free and yields trajectories as they finish:

    async with RayPool("daemon-host:50051", [EnvironmentSpec(make_env, count=8,
                       resources={"desktop": 1})], address="head:6379") as pool:
        async for item in pool.rollouts(tasks, n=4, reward=check, retries=1):
            ...  # a Trajectory, or a Lost (items.py)

Faults: an environment whose actor or node dies mid-rollout (RayActorError), or
that runs past `time_limit_s` (then ray.kill'ed), loses that attempt: a Lost is
yielded with the reason, the attempt is retried on the next free environment
while `retries` allow, and the dead environment is replaced by a new actor of
the same spec (placed wherever Ray finds room; it stays pending while none has).
A killed actor never answers, so no rollout is yielded twice. Rollouts left when
no environment is alive or starting end as Lost, never silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from holodesk.client.generation import Sampling
from holodesk.client.rollouts.ray_pool.actor import (
    ActorPlace,
    EnvironmentActor,
    EnvironmentFactory,
    RolloutSettings,
)
from holodesk.client.rollouts.ray_pool.items import Lost, PoolCounts, PoolItem
from holodesk.client.rollouts.ray_pool.loading import import_ray
from holodesk.client.rollouts.runner import ROLLOUT_OPTIONS, RewardFunction, session_template
from holodesk.client.rollouts.staleness import RolloutStats, StaleAction, check_bound
from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory
from holodesk.client.session import SessionOptions

log = logging.getLogger(__name__)

# How long a cancelled rollout may take to let go of its environment before the
# environment is killed and replaced instead.
CANCEL_GRACE_S = 10.0
# How long a pool's close waits for each environment to stop its desktop.
CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EnvironmentSpec:
    """`count` environments made by `factory` (called on the actor's node with the
    environment's name), each an actor needing `resources` (custom ones, such as
    {"desktop": 1}, pin it to the nodes started with them: `ray start
    --resources`) on a node whose labels match `label_selector` (`ray start
    --labels`). `num_cpus` is what Ray reserves per environment (0: desktops are
    counted by the custom resource alone)."""

    factory: EnvironmentFactory
    count: int = 1
    name: str = "env"
    resources: Mapping[str, float] = field(default_factory=dict)
    label_selector: Mapping[str, str] = field(default_factory=dict)
    num_cpus: float = 0.0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"environment spec {self.name!r}: count must be 1 or more")
        if not self.name.strip():
            raise ValueError("an environment spec needs a name")
        for resource, amount in self.resources.items():
            if not (amount > 0 and math.isfinite(amount)):
                raise ValueError(
                    f"environment spec {self.name!r}: resource {resource!r} needs a "
                    f"positive amount, got {amount!r}"
                )
        if self.num_cpus < 0:
            raise ValueError(f"environment spec {self.name!r}: num_cpus must be 0 or more")


@dataclass(frozen=True)
class EnvironmentInfo:
    name: str
    spec: str
    place: ActorPlace


class EnvironmentStartError(RuntimeError):
    """Environments of a pool could not start; the message names each and why."""


@dataclass(eq=False)
class _Slot:
    name: str
    spec: EnvironmentSpec
    actor: Any
    place: ActorPlace | None = None

    @property
    def node(self) -> str:
        return self.place.node_id if self.place is not None else "(not placed)"


@dataclass(frozen=True)
class _Finished:
    """The scheduler's last word: nothing more will come."""


@dataclass(frozen=True)
class _Job:
    task: RolloutTask
    sample: int
    attempt: int


class RayPool:
    """Environment actors on a Ray cluster and the rollouts run in them (module doc).

    `server` is the daemon's address as the nodes reach it (frames go from each
    actor to it). `address` is the cluster's (`ray.init(address=...)`; None: Ray's
    own choice: RAY_ADDRESS, else a running local instance, else a new one); a
    pool that connected closes that connection on close(). Actors must start
    within `start_timeout_s` (Ray waits for room on a matching node until then)."""

    def __init__(
        self,
        server: str,
        environments: Sequence[EnvironmentSpec],
        *,
        address: str | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        if not environments:
            raise ValueError("a pool needs at least one environment spec")
        names = [s.name for s in environments]
        if len(set(names)) != len(names):
            raise ValueError(f"environment spec names must be unique: {names}")
        self._server = server
        self._specs = tuple(environments)
        self._address = address
        self._start_timeout_s = start_timeout_s
        self._ray = import_ray()
        self._connected = False
        self._actor_class: Any = None
        self._idle: deque[_Slot] = deque()
        self._busy: set[_Slot] = set()
        self._starting: dict[asyncio.Task[Any], str] = {}
        self._numbers: dict[str, itertools.count[int]] = {}
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
    def environments(self) -> list[EnvironmentInfo]:
        """The environments alive now (idle or busy), and where each runs."""
        slots = [*self._idle, *self._busy]
        return [EnvironmentInfo(s.name, s.spec.name, s.place) for s in slots if s.place is not None]

    async def start(self) -> None:
        """Connect to the cluster and start every environment; EnvironmentStartError
        (after stopping those that did start) when any cannot."""
        ray = self._ray
        if not ray.is_initialized():
            ray.init(address=self._address, logging_level=logging.WARNING, log_to_driver=False)
            self._connected = True
        self._actor_class = ray.remote(EnvironmentActor)
        starts = [
            asyncio.create_task(self._start_slot(spec, self._next_name(spec)))
            for spec in self._specs
            for _ in range(spec.count)
        ]
        results = await asyncio.gather(*starts, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for result in results:
            if isinstance(result, _Slot):
                self._idle.append(result)
        if failures:
            await self.close()
            raise EnvironmentStartError(
                f"{len(failures)} of {len(results)} environments did not start: "
                + "; ".join(str(f) for f in failures)
            )

    def _next_name(self, spec: EnvironmentSpec) -> str:
        return f"{spec.name}-{next(self._numbers.setdefault(spec.name, itertools.count(1)))}"

    async def _start_slot(self, spec: EnvironmentSpec, name: str) -> _Slot:
        options: dict[str, Any] = {"num_cpus": spec.num_cpus, "max_restarts": 0}
        if spec.resources:
            options["resources"] = dict(spec.resources)
        if spec.label_selector:
            options["label_selector"] = dict(spec.label_selector)
        actor = self._actor_class.options(**options).remote(name, spec.factory, self._server)
        slot = _Slot(name, spec, actor)
        try:
            place: ActorPlace = await asyncio.wait_for(
                _awaited(actor.place.remote()), self._start_timeout_s
            )
        except TimeoutError:
            self._ray.kill(actor, no_restart=True)
            where = _placement_text(spec)
            raise EnvironmentStartError(
                f"environment {name} did not start within {self._start_timeout_s:g} s "
                f"(no node with room for {where}?)"
            ) from None
        except Exception as error:
            self._ray.kill(actor, no_restart=True)
            raise EnvironmentStartError(f"environment {name}: {_short(error)}") from error
        except BaseException:
            # Cancelled (the pool closes while it waits for room): never leave an actor
            # pending that would start a desktop nobody uses once room appears.
            self._ray.kill(actor, no_restart=True)
            raise
        slot.place = place
        log.info("environment %s runs on node %s (%s)", name, slot.node, place.hostname)
        return slot

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
        """Every task rolled out `n` times across the pool, yielded as each ends: a
        Trajectory (run_rollouts' arguments mean the same here; the reward function
        and options travel to the actors, so they must pickle), or a Lost.

        A lost attempt is retried up to `retries` times, each on whichever
        environment is free next. An attempt running past `time_limit_s` (None: no
        limit) has its environment killed and replaced. self.counts adds up."""
        check_bound(max_version_span, stale)
        if n < 1:
            raise ValueError(f"n must be 1 or more, got {n}")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, got {retries}")
        if time_limit_s is not None and not time_limit_s > 0:
            raise ValueError(f"time_limit_s must be more than 0, got {time_limit_s}")
        if self._actor_class is None:
            raise RuntimeError("start the pool first (async with RayPool(...) as pool)")
        jobs = [
            _Job(t if isinstance(t, RolloutTask) else RolloutTask(t), s, 1)
            for t in tasks
            for s in range(n)
        ]
        template = session_template(options, sampling, policy, max_steps, keep_frames)
        settings = RolloutSettings(template, reward, max_version_span, stale)
        return self._run(
            jobs, settings, retries, time_limit_s, stats if stats is not None else RolloutStats()
        )

    async def _run(
        self,
        jobs: list[_Job],
        settings: RolloutSettings,
        retries: int,
        time_limit_s: float | None,
        stats: RolloutStats,
    ) -> AsyncIterator[PoolItem]:
        # The scheduling runs on its own, so that an environment that frees up gets
        # its next rollout at once, however long the caller takes over each item.
        ended: asyncio.Queue[PoolItem | _Finished] = asyncio.Queue()
        scheduler = asyncio.create_task(
            self._schedule(jobs, settings, retries, time_limit_s, stats, ended)
        )
        try:
            while True:
                item = await ended.get()
                if isinstance(item, _Finished):
                    break
                yield item
            await scheduler  # raises what the scheduling raised
        finally:
            if not scheduler.done():
                scheduler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await scheduler

    async def _schedule(
        self,
        jobs: list[_Job],
        settings: RolloutSettings,
        retries: int,
        time_limit_s: float | None,
        stats: RolloutStats,
        ended: asyncio.Queue[PoolItem | _Finished],
    ) -> None:
        settings_ref = self._ray.put(settings)
        queue = deque(jobs)
        running: dict[asyncio.Task[Any], tuple[_Job, _Slot]] = {}
        try:
            while queue or running:
                while queue and self._idle:
                    job, slot = queue.popleft(), self._idle.popleft()
                    self._busy.add(slot)
                    attempt = asyncio.create_task(
                        self._attempt(slot, job, settings_ref, time_limit_s)
                    )
                    running[attempt] = (job, slot)
                if not running and not self._starting:
                    for job in queue:
                        ended.put_nowait(
                            self._lose(job, "", "", "no environment is left to run it", 0)
                        )
                    queue.clear()
                    break
                waiting: set[asyncio.Task[Any]] = {*running, *self._starting}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    if finished in self._starting:
                        self._started(finished)
                        continue
                    job, slot = running.pop(finished)
                    self._busy.discard(slot)
                    item = self._ended(finished, job, slot, queue, retries, time_limit_s)
                    if isinstance(item, Trajectory):
                        stats.count(item, settings.stale)
                        if item.stale and settings.stale == "drop":
                            continue
                    ended.put_nowait(item)
            ended.put_nowait(_Finished())
        except BaseException:
            ended.put_nowait(_Finished())
            raise
        finally:
            await self._abandon(running)

    async def _attempt(
        self, slot: _Slot, job: _Job, settings_ref: Any, time_limit_s: float | None
    ) -> Trajectory:
        ref = slot.actor.rollout.remote(job.task, job.sample, settings_ref)
        try:
            result: Trajectory = await asyncio.wait_for(_awaited(ref), time_limit_s)
        except asyncio.CancelledError:
            self._ray.cancel(ref)
            raise
        return result

    def _ended(
        self,
        finished: asyncio.Task[Any],
        job: _Job,
        slot: _Slot,
        queue: deque[_Job],
        retries: int,
        time_limit_s: float | None,
    ) -> PoolItem:
        ray = self._ray
        error = finished.exception()
        if error is None:
            self._idle.append(slot)
            self.counts.done += 1
            trajectory: Trajectory = finished.result()
            return trajectory
        if isinstance(error, TimeoutError):
            ray.kill(slot.actor, no_restart=True)
            self.counts.hung += 1
            why = f"it ran past its time limit of {time_limit_s:g} s; the environment was killed"
        elif isinstance(error, ray.exceptions.RayActorError):
            ray.kill(slot.actor, no_restart=True)  # an unavailable one must never answer late
            why = _death_reason(error)
        else:
            # The rollout's own code failed (a reward function raised): the caller's bug,
            # raised as run_rollouts raises it. The environment is still sound.
            self._idle.append(slot)
            raise error
        self._replace(slot)
        retrying = job.attempt <= retries
        if retrying:
            queue.appendleft(_Job(job.task, job.sample, job.attempt + 1))
        return self._lose(job, slot.name, slot.node, why, int(retrying))

    def _lose(self, job: _Job, environment: str, node: str, why: str, retrying: int) -> Lost:
        self.counts.lost += 1
        if retrying:
            self.counts.retried += 1
        else:
            self.counts.given_up += 1
        where = f"in environment {environment} on node {node}: " if environment else ""
        log.warning(
            "rollout %d of %r lost %s%s%s",
            job.sample,
            job.task.task[:80],
            where,
            why,
            " (retrying)" if retrying else "",
        )
        return Lost(job.task, job.sample, environment, node, why, job.attempt, bool(retrying))

    def _replace(self, dead: _Slot) -> None:
        name = self._next_name(dead.spec)
        self.counts.replaced += 1
        task = asyncio.create_task(self._start_slot(dead.spec, name))
        self._starting[task] = name

    def _started(self, task: asyncio.Task[Any]) -> None:
        name = self._starting.pop(task)
        error = task.exception()
        if error is not None:
            log.warning("replacement environment %s did not start: %s", name, error)
            return
        self._idle.append(task.result())

    async def _abandon(self, running: dict[asyncio.Task[Any], tuple[_Job, _Slot]]) -> None:
        """The caller stopped early (or a rollout raised): cancel what still runs; an
        environment that does not let go within CANCEL_GRACE_S is killed and replaced."""
        if not running:
            return
        for attempt in running:
            attempt.cancel()
        await asyncio.wait(running, timeout=CANCEL_GRACE_S)
        for attempt, (_, slot) in running.items():
            self._busy.discard(slot)
            ok = attempt.done() and (
                attempt.cancelled() or not isinstance(attempt.exception(), Exception)
            )
            if ok:
                self._idle.append(slot)
            else:
                self._ray.kill(slot.actor, no_restart=True)
                self._replace(slot)

    async def close(self) -> None:
        """Stop every environment's desktop, then its actor; disconnect if start() connected."""
        ray = self._ray
        for task in self._starting:
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        self._starting.clear()
        slots = [*self._idle, *self._busy]
        self._idle.clear()
        self._busy.clear()
        if slots:
            closing = [
                asyncio.wait_for(_awaited(s.actor.close.remote()), CLOSE_TIMEOUT_S) for s in slots
            ]
            results = await asyncio.gather(*closing, return_exceptions=True)
            for slot, result in zip(slots, results, strict=True):
                if isinstance(result, BaseException):
                    log.warning(
                        "environment %s did not close cleanly: %s", slot.name, _short(result)
                    )
                ray.kill(slot.actor, no_restart=True)
        if self._connected:
            ray.shutdown()
            self._connected = False


async def _awaited(ref: Any) -> Any:
    return await ref


def _placement_text(spec: EnvironmentSpec) -> str:
    parts = [f"{k}={v:g}" for k, v in spec.resources.items()]
    parts += [f"label {k}={v}" for k, v in spec.label_selector.items()]
    if spec.num_cpus:
        parts.append(f"{spec.num_cpus:g} CPU")
    return ", ".join(parts) or "an actor"


_DETAIL_KEYS = ("class_name:", "actor_id:", "pid:", "name:", "namespace:", "ip:")


def _death_reason(error: BaseException) -> str:
    """Ray's account of an actor's death, less its identifiers: e.g. 'The actor
    died because its node has died ... health check failed ...'."""
    lines = [line.strip() for line in str(error).splitlines()]
    kept = [
        line
        for line in lines
        if line
        and not line.startswith(_DETAIL_KEYS)
        and line != "The actor died unexpectedly before finishing this task."
    ]
    return " ".join(kept) or (lines[0] if lines else type(error).__name__)


def _short(error: BaseException, limit: int = 600) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
