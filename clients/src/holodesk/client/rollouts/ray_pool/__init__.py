"""Rollouts on a Ray cluster: environments as Ray actors on the nodes that host
desktops, surviving lost environments and nodes (pool.py); LocalPool, the same
interface in this process. `ray` comes with the client's `ray` extra and is
imported only when a RayPool is made (docs/ray.md).

    specs = [EnvironmentSpec(make_env, count=8, resources={"desktop": 1})]
    async with RayPool("daemon:50051", specs, address="head:6379") as pool:
        async for item in pool.rollouts(tasks, n=4, reward=check, retries=1):
            if isinstance(item, Lost):
                ...  # item.reason; item.retrying says whether it runs again
"""

from holodesk.client.rollouts.ray_pool.actor import ActorPlace, EnvironmentFactory
from holodesk.client.rollouts.ray_pool.items import Lost, PoolCounts, PoolItem
from holodesk.client.rollouts.ray_pool.loading import RayUnavailableError
from holodesk.client.rollouts.ray_pool.local import LocalPool
from holodesk.client.rollouts.ray_pool.pool import (
    EnvironmentInfo,
    EnvironmentSpec,
    EnvironmentStartError,
    RayPool,
)

__all__ = [
    "ActorPlace",
    "EnvironmentFactory",
    "EnvironmentInfo",
    "EnvironmentSpec",
    "EnvironmentStartError",
    "LocalPool",
    "Lost",
    "PoolCounts",
    "PoolItem",
    "RayPool",
    "RayUnavailableError",
]
