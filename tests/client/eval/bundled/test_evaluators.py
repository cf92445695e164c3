"""Each file-based task of the bundled suite (terminal, text editor, spreadsheet), its
evaluator on a HOME that should pass it and on one that should fail it.

The states are the files the apps would have left (states.py); the evaluator runs as
`holodesk eval tasks` runs it (evaluate(): getters copy files, run commands, call
ssconvert), so a wrong path, rule or expected file in a task fails here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.eval.tasks import Task, evaluate
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.processes import OwnedProcesses

from .states import STATES, State
from .suite import bundled, task

FILE_DOMAINS = ("terminal", "text_editor", "spreadsheet")


@pytest.fixture
def context(tmp_path: Path) -> Iterator[TaskContext]:
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    processes = OwnedProcesses(tmp_path / "processes.log")
    try:
        yield TaskContext(
            display=":0", home=home, cache=cache, task_folder=tmp_path, processes=processes
        )
    finally:
        processes.stop_all()


def _score(found: Task, state: State, context: TaskContext) -> float:
    context.task_folder = found.folder
    state(context.home)
    return evaluate(found, context, failed_on_purpose=False).score


def test_every_feasible_file_task_has_both_states() -> None:
    tasks = {
        t.id for t in bundled().tasks if t.domain in FILE_DOMAINS and not t.evaluator.infeasible
    }
    assert tasks == set(STATES)


@pytest.mark.parametrize("task_id", sorted(STATES))
def test_the_passing_state_scores_1(task_id: str, context: TaskContext) -> None:
    passing, _ = STATES[task_id]
    found = task(task_id)
    assert _score(found, passing, context) == 1.0, evaluate(found, context, failed_on_purpose=False)


@pytest.mark.parametrize("task_id", sorted(STATES))
def test_the_failing_state_scores_0(task_id: str, context: TaskContext) -> None:
    _, failing = STATES[task_id]
    score = evaluate(task(task_id), context, failed_on_purpose=False)
    assert score.score == 0.0  # nothing done yet: an empty HOME fails too
    assert _score(task(task_id), failing, context) == 0.0


def test_a_feasible_task_failed_on_purpose_scores_0_even_when_done(context: TaskContext) -> None:
    found = task("terminal-greeting-file")
    STATES[found.id][0](context.home)
    context.task_folder = found.folder
    assert evaluate(found, context, failed_on_purpose=True).score == 0.0


@pytest.mark.parametrize("task_id", ["editor-encrypted-pdf", "browser-todo-sync"])
def test_an_infeasible_task_passes_only_when_the_agent_gives_up(
    task_id: str, context: TaskContext
) -> None:
    found = task(task_id)
    assert found.evaluator.infeasible
    assert evaluate(found, context, failed_on_purpose=True).score == 1.0
    assert evaluate(found, context, failed_on_purpose=False).score == 0.0
