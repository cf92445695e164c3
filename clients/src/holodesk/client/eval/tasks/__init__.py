"""Task suites in OSWorld's format, run on this host (`holodesk eval tasks`).

FORMAT.md says exactly what the reader accepts; docs/eval/tasks.md is the user's page.

    suite = read_suite(Path("evaluation_examples"))
    layout = Layout(Path("results"), model="holotron", k=3)
    asyncio.run(run_suite("gpu-host:50051", suite, layout, environments=4))

Or as rewards of run_rollouts:

    task = read_task(Path("examples/os/echo-done.json"))
    with TaskEnvironment() as environment:
        trajectories = asyncio.run(run_rollouts(
            server, [rollout_task(task)], [environment], reward=task_reward(task)))
"""

from holodesk.client.eval.tasks.environment import TaskEnvironment
from holodesk.client.eval.tasks.evaluate import Score, evaluate
from holodesk.client.eval.tasks.model import Problem, Suite, Task
from holodesk.client.eval.tasks.reader import TaskFileError, read_suite, read_task
from holodesk.client.eval.tasks.results import Layout
from holodesk.client.eval.tasks.rollout import failed_on_purpose, rollout_task, task_reward
from holodesk.client.eval.tasks.runner import RunLog, record_run, run_one, run_suite

__all__ = [
    "Layout",
    "Problem",
    "RunLog",
    "Score",
    "Suite",
    "Task",
    "TaskEnvironment",
    "TaskFileError",
    "evaluate",
    "failed_on_purpose",
    "read_suite",
    "read_task",
    "record_run",
    "rollout_task",
    "run_one",
    "run_suite",
    "task_reward",
]
