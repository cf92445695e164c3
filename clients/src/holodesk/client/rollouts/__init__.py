"""Rollouts for reinforcement learning and data generation: many agent sessions
in parallel against many environments (Xvfb displays, web pages, VNC desktops,
sandbox containers), collected as
trajectories with every step's frame, actions, results and sampled completions
(with logprobs), each scored by a reward function whose verdict is recorded.

    with XvfbEnvironment(app) as a, XvfbEnvironment(app) as b:
        trajectories = asyncio.run(run_rollouts(
            "gpu-host:50051", ["fill the form"], [a, b], n=8,
            sampling=Sampling(temperature=1.0, logprobs=True), reward=check,
        ))

`app(display)` is a context manager that starts the app on that X display (and
stops it on exit); `check(finished)` returns a Reward, a float, a bool or None.
"""

from holodesk.client.rollouts.environments import (
    AppFactory,
    Environment,
    SandboxEnvironment,
    VncEnvironment,
    WebEnvironment,
    XvfbEnvironment,
)
from holodesk.client.rollouts.runner import (
    ROLLOUT_OPTIONS,
    Finished,
    RewardFunction,
    RewardValue,
    as_reward,
    run_rollouts,
)
from holodesk.client.rollouts.staleness import RolloutStats, StaleAction
from holodesk.client.rollouts.trajectory import Reward, RolloutTask, Trajectory, TrajectoryStep

__all__ = [
    "ROLLOUT_OPTIONS",
    "AppFactory",
    "Environment",
    "Finished",
    "Reward",
    "RewardFunction",
    "RewardValue",
    "RolloutStats",
    "RolloutTask",
    "SandboxEnvironment",
    "StaleAction",
    "Trajectory",
    "TrajectoryStep",
    "VncEnvironment",
    "WebEnvironment",
    "XvfbEnvironment",
    "as_reward",
    "run_rollouts",
]
