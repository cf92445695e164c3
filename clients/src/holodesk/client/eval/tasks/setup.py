"""Runs a task's `config` (before the session) or `postconfig` (after it, before the
getters) steps in order; the first that fails stops them, named."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from holodesk.client.eval.tasks.context import StepError, TaskContext
from holodesk.client.eval.tasks.model import ConfigStep
from holodesk.client.eval.tasks.registry import STEPS


class SetupError(Exception):
    """A set-up step failed: the message names the task, the step and why."""


def run_steps(
    steps: Sequence[ConfigStep], context: TaskContext, *, task_id: str, where: str = "config"
) -> None:
    for number, step in enumerate(steps, 1):
        try:
            STEPS[step.type].run(context, step.parameters)
        except (StepError, OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
            why = str(error) or type(error).__name__
            raise SetupError(
                f"task {task_id}: {where} step {number} ({step.type}) failed: {why}"
            ) from error
