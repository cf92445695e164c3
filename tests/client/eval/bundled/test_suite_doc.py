"""docs/eval/bundled-suite.md's task list is the suite's: every task, its app, its
instruction and what its evaluator reads, rendered from the task files. When a task
changes, this fails and prints the table to paste."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from holodesk.client.eval.tasks import Task

from .suite import bundled

PAGE = Path(__file__).resolve().parents[4] / "docs" / "eval" / "bundled-suite.md"
BEGIN = "<!-- task list: tests/client/eval/bundled/test_suite_doc.py renders it -->"
END = "<!-- end of the task list -->"


def _getters(spec: Any) -> list[str]:
    specs = spec if isinstance(spec, list) else [spec]
    return [g["type"] for g in specs if g]


def _checked_by(task: Task) -> str:
    evaluator = task.raw["evaluator"]
    funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
    if funcs == ["infeasible"]:
        return "`infeasible` (passes only when the agent gives up)"
    getters = _getters(evaluator.get("result"))
    parts = [
        f"`{f}`({', '.join(f'`{g}`' for g in getters[i : i + 1])})" for i, f in enumerate(funcs)
    ]
    return f" {evaluator.get('conj', 'and')} ".join(parts)


def render() -> str:
    lines = [
        "| domain | task | app | instruction (as a model gets it) | scored by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for task in bundled().tasks:
        apps = ", ".join(task.raw.get("related_apps", []))
        instruction = task.instruction.replace("|", "\\|")
        lines.append(
            f"| {task.domain} | `{task.id}` | {apps} | {instruction} | {_checked_by(task)} |"
        )
    return "\n".join(lines)


def test_the_page_lists_every_task_as_the_files_say() -> None:
    text = PAGE.read_text()
    assert BEGIN in text, f"{PAGE} lost its task-list markers"
    assert END in text, f"{PAGE} lost its task-list markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    expected = render()
    assert shown == expected, f"paste this between the markers of {PAGE}:\n\n{expected}\n"
