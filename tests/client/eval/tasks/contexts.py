"""A TaskContext on this host without a display, for getters and evaluators that read
files and run commands (the environment's tests give them a real one)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.processes import OwnedProcesses


@contextmanager
def bare_context(root: Path) -> Iterator[TaskContext]:
    for name in ("home", "cache", "suite"):
        (root / name).mkdir(parents=True, exist_ok=True)
    processes = OwnedProcesses(root / "processes.log")
    try:
        yield TaskContext(
            display=":0",
            home=root / "home",
            cache=root / "cache",
            task_folder=root / "suite",
            processes=processes,
        )
    finally:
        processes.stop_all()
