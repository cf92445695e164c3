"""The bundled suite as the tests read it: its folder, its tasks (read and checked by
the suite reader), and one of them by id."""

from __future__ import annotations

from functools import cache

from holodesk.client.eval.tasks import Suite, Task, read_suite
from holodesk.client.eval.tasks.command import BUNDLED


@cache
def bundled() -> Suite:
    return read_suite(BUNDLED, instruction_field="ocr_instruction")


def task(task_id: str) -> Task:
    for found in bundled().tasks:
        if found.id == task_id:
            return found
    raise KeyError(f"the bundled suite has no task {task_id!r}")
