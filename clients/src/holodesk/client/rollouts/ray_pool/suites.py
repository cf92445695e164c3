"""`holodesk eval tasks` suites on a pool: the same per-run work as eval's run_suite
(each run a rollout scored by its task's evaluator, beside its desktop), scheduled
by a RayPool (or a LocalPool) instead of run_suite's own workers.

    specs = [EnvironmentSpec(TaskEnvironments(1280, 800), count=8, resources={"desktop": 1})]
    async with RayPool(server, specs, address="head:6379") as pool:
        run_log = await run_suite_on_pool(pool, read_suite(path), Layout(out, model="m"))

The actor resets its TaskEnvironment with the task's config, runs the session and
scores it with the task's evaluator (task_reward: the getters read the
environment's files and browser there); the driver writes each run's folder in
OSWorld's layout as it ends (eval's record_run), so a long suite never holds every
run's frames. A run lost for good (its actor or node died, no retry left) is left
out of the results, said so in RunLog.left_out, and runs again on --resume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from holodesk.client.eval.tasks.environment import TaskEnvironment
from holodesk.client.eval.tasks.model import Suite
from holodesk.client.eval.tasks.results import Layout
from holodesk.client.eval.tasks.rollout import REPEAT_KEY, rollout_task, task_of, task_reward
from holodesk.client.eval.tasks.runner import DEFAULT_MAX_STEPS, LeftOut, RunLog, record_run
from holodesk.client.rollouts.ray_pool.items import Lost
from holodesk.client.rollouts.ray_pool.local import LocalPool
from holodesk.client.rollouts.ray_pool.pool import RayPool
from holodesk.client.rollouts.runner import ROLLOUT_OPTIONS
from holodesk.client.rollouts.trajectory import Trajectory
from holodesk.client.session import SessionOptions


@dataclass(frozen=True)
class TaskEnvironments:
    """An environment factory for EnvironmentSpec: a TaskEnvironment named as asked."""

    width: int = 1280
    height: int = 800

    def __call__(self, name: str) -> TaskEnvironment:
        return TaskEnvironment(width=self.width, height=self.height, name=name)


async def run_suite_on_pool(
    pool: RayPool | LocalPool,
    suite: Suite,
    layout: Layout,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    instruction_field: str = "instruction",
    options: SessionOptions = ROLLOUT_OPTIONS,
    retries: int = 0,
    time_limit_s: float | None = None,
    on_run: Callable[[Trajectory], None] | None = None,
) -> RunLog:
    """Every task's remaining repeats (layout.todo) across the pool, recorded as they end
    (then on_run is told, as run_suite's)."""
    jobs = [
        rollout_task(task, instruction_field=instruction_field, repeat=r, max_steps=max_steps)
        for task in suite.tasks
        for r in layout.todo(task)
    ]
    run_log = RunLog()
    if not jobs:
        return run_log
    async for item in pool.rollouts(
        jobs,
        reward=task_reward(),
        keep_frames=True,
        options=options,
        retries=retries,
        time_limit_s=time_limit_s,
    ):
        if isinstance(item, Lost):
            if not item.retrying:
                repeat = int(item.task.metadata.get(REPEAT_KEY, 0))
                why = f"lost in environment {item.environment}: {item.reason}"
                run_log.left_out.append(LeftOut(task_of(item.task), repeat, why, daemon=False))
            continue
        record_run(layout, item, run_log)
        if on_run is not None:
            on_run(item)
    for task in suite.tasks:
        layout.finish_task(task)
    return run_log
