"""Rollout tasks from a JSON Lines file (`holodesk rollouts TASKS.jsonl`): one object
per line,

    {"task": "fill the form", "url": "https://...", "max_steps": 20, "metadata": {...}}

with only `task` required; `metadata` reaches the reward function untouched. Blank
lines are skipped. A bad line is a TaskFileError naming the file, the line and
the field, never a task run with half its settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from holodesk.client.rollouts.trajectory import RolloutTask

_FIELDS = ("task", "url", "max_steps", "metadata")


class TaskFileError(ValueError):
    """The task file cannot be read as rollout tasks; the message says where."""


def read_tasks(path: Path) -> list[RolloutTask]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TaskFileError(f"{path}: cannot read the task file: {error}") from error
    tasks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            tasks.append(_task(line, f"{path}:{number}"))
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (one JSON object per line, each with a 'task')")
    return tasks


def _task(line: str, where: str) -> RolloutTask:
    try:
        row: Any = json.loads(line)
    except json.JSONDecodeError as error:
        raise TaskFileError(f"{where}: not JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(row, dict):
        raise TaskFileError(f"{where}: a task is a JSON object, not {type(row).__name__}")
    unknown = sorted(set(row) - set(_FIELDS))
    if unknown:
        raise TaskFileError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))} "
            f"(a task has {', '.join(_FIELDS)})"
        )
    task, url = row.get("task"), row.get("url")
    max_steps, metadata = row.get("max_steps", 0), row.get("metadata", {})
    if not isinstance(task, str) or not task.strip():
        raise TaskFileError(f"{where}: 'task' must be a non-empty string")
    if url is not None and not isinstance(url, str):
        raise TaskFileError(f"{where}: 'url' must be a string")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0:
        raise TaskFileError(f"{where}: 'max_steps' must be a whole number, 0 or more")
    if not isinstance(metadata, dict):
        raise TaskFileError(f"{where}: 'metadata' must be a JSON object")
    return RolloutTask(task, url=url, max_steps=max_steps, metadata=metadata)
