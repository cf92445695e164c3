"""Runs a suite: every task k times, each run in a fresh environment, N environments
at once (a worker per environment taking runs from one queue), each run a rollout of
run_rollouts scored by its evaluator (the rollout's reward) and written in OSWorld's
layout as it finishes (results.py), its frames let go then.

The seam: environments come from `environment_factory(i)`, anything with the
Environment protocol (rollouts/environments.py) whose `context` is a TaskContext
(a TaskEnvironment here). What one run is: `run_one` (reset with the task's config,
the session, the evaluator: all where the environment is, since the getters read its
files and browser) and `record_run` (its folder, where the results are). A pool that
schedules runs itself (a Ray actor per desktop) calls run_one beside each desktop
and record_run with the Trajectory it returns.

Which runs are scored: a session that ended (done, failed, step or time limit) is
scored by the evaluator, as OSWorld scores what its agent left; a run that never
really ran (its set-up failed, the daemon dropped, it was cancelled) gets no
result.txt: it is counted as left out, said so, and run again on --resume."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc.aio

from holodesk.client.channel import open_channel
from holodesk.client.eval.tasks.environment import TaskEnvironment
from holodesk.client.eval.tasks.model import Suite, Task
from holodesk.client.eval.tasks.results import Layout, write_run
from holodesk.client.eval.tasks.rollout import REPEAT_KEY, rollout_task, task_of, task_reward
from holodesk.client.events import Outcome
from holodesk.client.rollouts import ROLLOUT_OPTIONS, run_rollouts
from holodesk.client.rollouts.environments import Environment
from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory
from holodesk.client.session import SessionOptions

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 15
# Sessions that ended in a way the evaluator can judge.
SCORED = frozenset({Outcome.SUCCEEDED, Outcome.FAILED, Outcome.STEP_LIMIT, Outcome.TIME_LIMIT})

EnvironmentFactory = Callable[[int], Environment]


def default_environments(width: int = 1280, height: int = 800) -> EnvironmentFactory:
    return lambda i: TaskEnvironment(width=width, height=height, name=f"env-{i}")


@dataclass(frozen=True)
class LeftOut:
    """A run that got no score, and why. `daemon`: its session broke (the daemon was
    unreachable or dropped it), not its set-up."""

    task: Task
    repeat: int
    why: str
    daemon: bool


@dataclass
class RunLog:
    """What a suite run did, run by run (for the summary and the command's output)."""

    scored: list[tuple[Task, int, float]] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)


def record_run(layout: Layout, trajectory: Trajectory, run_log: RunLog) -> None:
    """Write one finished run's folder (result.txt only for a scored run)."""
    task = task_of(trajectory.task)
    repeat = int(trajectory.task.metadata.get(REPEAT_KEY, 0))
    folder = layout.run_dir(task, repeat)
    reward = trajectory.reward
    if trajectory.outcome not in SCORED or reward is None or reward.reward is None:
        why = trajectory.reason or f"the session ended {trajectory.outcome.value}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "error.txt").write_text(why + "\n", encoding="utf-8")
        # run_rollouts says an environment that could not be reset (here: a set-up step
        # failed) in its reason; any other ERROR is the session's.
        daemon = trajectory.outcome is Outcome.ERROR and "could not be reset" not in why
        run_log.left_out.append(LeftOut(task, repeat, why, daemon))
        log.warning("task %s/%s run %d not scored: %s", task.domain, task.id, repeat, why)
        return
    extra: dict[str, Any] = {"repeat": repeat, "environment": trajectory.environment}
    write_run(folder, trajectory, reward.reward, reward.note, extra)
    run_log.scored.append((task, repeat, reward.reward))


async def run_one(
    server: str | grpc.aio.Channel,
    rollout: RolloutTask,
    environment: Environment,
    *,
    options: SessionOptions = ROLLOUT_OPTIONS,
) -> Trajectory:
    """One run of one task (made by rollout_task) in `environment`, scored by its
    evaluator: the Trajectory carries the frames, the outcome and the reward."""
    (trajectory,) = await run_rollouts(
        server, [rollout], [environment], reward=task_reward(), keep_frames=True, options=options
    )
    return trajectory


async def run_suite(
    server: str | grpc.aio.Channel,
    suite: Suite,
    layout: Layout,
    *,
    environments: int = 1,
    max_steps: int = DEFAULT_MAX_STEPS,
    instruction_field: str = "instruction",
    environment_factory: EnvironmentFactory | None = None,
    options: SessionOptions = ROLLOUT_OPTIONS,
    on_run: Callable[[Trajectory], None] | None = None,
) -> RunLog:
    """Run every task's remaining repeats (layout.todo) and record them."""
    if environments < 1:
        raise ValueError(f"environments must be 1 or more, got {environments}")
    jobs = [
        rollout_task(task, instruction_field=instruction_field, repeat=r, max_steps=max_steps)
        for task in suite.tasks
        for r in layout.todo(task)
    ]
    run_log = RunLog()
    if not jobs:
        return run_log
    factory = environment_factory or default_environments()
    pool: Sequence[Environment] = [factory(i) for i in range(min(environments, len(jobs)))]
    queue: asyncio.Queue[RolloutTask] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    channel = open_channel(server, options.channel) if isinstance(server, str) else server

    async def work(environment: Environment) -> None:
        # One environment, one run at a time; each run is recorded (and its frames let
        # go) as it ends, so a long suite never holds more than N runs in memory.
        while not queue.empty():
            trajectory = await run_one(channel, queue.get_nowait(), environment, options=options)
            record_run(layout, trajectory, run_log)
            if on_run is not None:
                on_run(trajectory)

    try:
        async with asyncio.TaskGroup() as group:
            for environment in pool:
                group.create_task(work(environment))
    finally:
        for environment in pool:
            await asyncio.to_thread(environment.close)
        if isinstance(server, str):
            await channel.close()
    for task in suite.tasks:
        layout.finish_task(task)
    return run_log
