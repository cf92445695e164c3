"""What runs inside each environment actor: one desktop and its sessions.

The actor is made on its node from a picklable factory, starts its desktop there
(after guarding it with the reaper) and runs each rollout itself with the same
RolloutRunner run_rollouts uses: frames go from this desktop straight to the
daemon, the reward function reads the app's state here, and only the trajectory
travels back to the driver. Plain Python: the pool wraps it with ray.remote, so
this module imports nothing of Ray.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import grpc.aio

from holodesk.client.channel import open_channel
from holodesk.client.rollouts.environments import Environment
from holodesk.client.rollouts.ray_pool.reaper import guard_this_process
from holodesk.client.rollouts.runner import RewardFunction, RolloutRunner, StalenessBound
from holodesk.client.rollouts.staleness import RolloutStats, StaleAction
from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory
from holodesk.client.session import SessionOptions

# Makes the environment named by its argument; runs on the actor's node, so it must
# be picklable (a module-level function or class, or a functools.partial of one).
EnvironmentFactory = Callable[[str], Environment]


@dataclass(frozen=True)
class RolloutSettings:
    """Everything one `rollouts()` call sends each actor once (through Ray's object
    store): the session template, the reward function and the staleness bound."""

    template: SessionOptions
    reward: RewardFunction | None
    max_version_span: int | None
    stale: StaleAction


@dataclass(frozen=True)
class ActorPlace:
    """Where an environment actor runs: its Ray node, host and process."""

    node_id: str
    hostname: str
    pid: int
    # The reaper's marker of every process this environment starts (reaper.py).
    cookie: str


class EnvironmentActor:
    def __init__(self, name: str, factory: EnvironmentFactory, server: str) -> None:
        self._cookie = guard_this_process()
        self._environment = factory(name)
        if self._environment.name != name:
            raise ValueError(
                f"the environment factory named its environment {self._environment.name!r}, "
                f"not {name!r} as asked: pass the name it is given to the environment"
            )
        self._environment.start()
        self._server = server
        self._channel: grpc.aio.Channel | None = None
        self._node_id = _node_id()

    def place(self) -> ActorPlace:
        return ActorPlace(self._node_id, socket.gethostname(), os.getpid(), self._cookie)

    async def rollout(
        self, task: RolloutTask, sample: int, settings: RolloutSettings
    ) -> Trajectory:
        if self._channel is None:
            # Opened here, on the actor's own event loop, and kept for its later rollouts.
            self._channel = open_channel(self._server, settings.template.channel)
        runner = RolloutRunner(
            self._channel,
            settings.template,
            settings.reward,
            None,
            # The driver counts staleness over all actors; this count is thrown away.
            StalenessBound(settings.max_version_span, settings.stale, RolloutStats()),
        )
        return await runner.run(task, sample, self._environment)

    async def close(self) -> None:
        """Stop the desktop (the reaper catches what a kill leaves instead)."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        self._environment.close()


def _node_id() -> str:
    from holodesk.client.rollouts.ray_pool.loading import import_ray

    ray = import_ray()
    return str(ray.get_runtime_context().get_node_id())
