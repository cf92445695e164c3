"""OSWorld tasks as rollouts: a RolloutTask that carries its Task, and the task's
evaluator as a reward function (task_reward), so `run_rollouts` runs a suite's tasks
and scores them with no more than

    task = read_task(Path("examples/os/echo.json"))
    with TaskEnvironment() as environment:
        trajectories = asyncio.run(run_rollouts(
            server, [rollout_task(task)], [environment], reward=task_reward(task)))
"""

from __future__ import annotations

import asyncio

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.evaluate import Score, evaluate
from holodesk.client.eval.tasks.model import Task
from holodesk.client.events import Outcome
from holodesk.client.rollouts.runner import Finished, RewardFunction
from holodesk.client.rollouts.trajectory import Reward, RolloutTask, Trajectory

TASK_KEY = "osworld_task"
REPEAT_KEY = "repeat"


def rollout_task(
    task: Task, *, instruction_field: str = "instruction", repeat: int = 0, max_steps: int = 0
) -> RolloutTask:
    """The rollout of `task`, told in `instruction_field` ("instruction" or
    "ocr_instruction"); `repeat` numbers the k runs of one task."""
    return RolloutTask(
        task.instruction_for(instruction_field),
        max_steps=max_steps,
        metadata={TASK_KEY: task, REPEAT_KEY: repeat},
    )


def task_of(rollout: RolloutTask) -> Task:
    task = rollout.metadata.get(TASK_KEY)
    if not isinstance(task, Task):
        raise ValueError(
            f"the rollout task {rollout.task[:60]!r} carries no OSWorld task "
            f"(metadata[{TASK_KEY!r}]; make it with rollout_task())"
        )
    return task


def failed_on_purpose(trajectory: Trajectory) -> bool:
    """The session ended FAILED by the policy's own fail decision: its last step ran
    nothing here (a fail alone, as OSWorld's FAIL action is). A step limit, a time
    limit, an error or a cancel is no decision to fail."""
    if trajectory.outcome is not Outcome.FAILED or not trajectory.steps:
        return False
    return not trajectory.steps[-1].actions


def task_reward(task: Task | None = None) -> RewardFunction:
    """A run_rollouts reward function scoring by the task's evaluator (None: the task
    each rollout carries). The environment must be a TaskEnvironment (it holds the
    state to read); the score is the reward, success is a score of 1."""

    async def reward(finished: Finished) -> Reward:
        # What a TaskEnvironment holds (its `context`), not the class: environment.py
        # builds on this module.
        context = getattr(finished.environment, "context", None)
        if not isinstance(context, TaskContext):
            raise TypeError(
                f"OSWorld evaluators read a TaskEnvironment's state, not a "
                f"{type(finished.environment).__name__}'s"
            )
        trajectory = finished.trajectory
        definition = task if task is not None else task_of(trajectory.task)
        score = await asyncio.to_thread(score_trajectory, definition, context, trajectory)
        return Reward(reward=score.score, success=score.success, note=score.note)

    return reward


def score_trajectory(task: Task, context: TaskContext, trajectory: Trajectory) -> Score:
    """The task's score on its environment's state after `trajectory` (blocking)."""
    return evaluate(task, context, failed_on_purpose=failed_on_purpose(trajectory))
