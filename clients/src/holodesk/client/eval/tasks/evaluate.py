"""Scores a finished task by its evaluator, exactly as OSWorld's DesktopEnv.evaluate:

1. postconfig steps run (after the session, before any getter; one that fails is
   said in the note, and scoring goes on, as OSWorld does not check them);
2. `infeasible`: 1 when the agent failed on purpose, else 0; any other task the
   agent failed on purpose scores 0 without reading anything;
3. one metric: metric(result, expected, **options), or metric(result, **options)
   when the task has no expected getter;
4. a list: "and" stops at the first metric giving 0 (score 0), else the mean;
   "or" stops at the first giving 1 (score 1), else the max.

What OSWorld would crash on (a getter or metric raising) scores that metric 0 here,
with the error in the note: a score is never given for a state nobody read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.model import GetterSpec, MetricCall, Task
from holodesk.client.eval.tasks.registry import GETTERS, METRICS
from holodesk.client.eval.tasks.setup import SetupError, run_steps


@dataclass(frozen=True)
class Score:
    """The task's score in [0, 1] and what led to it, for result files and rewards."""

    score: float
    note: str = ""

    @property
    def success(self) -> bool:
        return self.score >= 1.0


class _UnreadError(Exception):
    """A getter or metric failed; the metric scores 0."""


def evaluate(task: Task, context: TaskContext, *, failed_on_purpose: bool) -> Score:
    """The task's score on the state `context` shows now. `failed_on_purpose`: the
    session ended with the policy's own fail decision (OSWorld's FAIL action)."""
    evaluator = task.evaluator
    try:
        run_steps(evaluator.postconfig, context, task_id=task.id, where="postconfig")
    except SetupError as error:
        # OSWorld scores on whatever state there is: its postconfig's outcome is not
        # checked. The failure goes into the note.
        scored = _score(task, context, failed_on_purpose=failed_on_purpose)
        return Score(scored.score, f"{error}; {scored.note}")
    return _score(task, context, failed_on_purpose=failed_on_purpose)


def _score(task: Task, context: TaskContext, *, failed_on_purpose: bool) -> Score:
    evaluator = task.evaluator
    if evaluator.infeasible:
        if failed_on_purpose:
            return Score(1.0, "infeasible, and the agent failed on purpose")
        return Score(0.0, "infeasible, but the agent did not fail on purpose")
    if failed_on_purpose:
        return Score(0.0, "the agent failed on purpose on a feasible task")
    if evaluator.single:
        score, note = _one(evaluator.calls[0], context)
        return Score(score, note)
    notes: list[str] = []
    scores: list[float] = []
    for call in evaluator.calls:
        score, note = _one(call, context)
        notes.append(note)
        if evaluator.conj == "and" and score == 0.0:
            return Score(0.0, "; ".join(notes))
        if evaluator.conj == "or" and score == 1.0:
            return Score(1.0, "; ".join(notes))
        scores.append(score)
    total = sum(scores) / len(scores) if evaluator.conj == "and" else max(scores)
    return Score(total, "; ".join(notes))


def _one(call: MetricCall, context: TaskContext) -> tuple[float, str]:
    try:
        result = _get(call.result, context) if call.result is not None else None
        metric = METRICS[call.func]
        if call.expected is not None:
            expected = _get(call.expected, context)
            value = metric(result, expected, **call.options)
        else:
            value = metric(result, **call.options)
    except _UnreadError as error:
        return 0.0, f"{call.func}: 0 ({error})"
    except Exception as error:  # a metric that breaks on what it got: it scores 0
        return 0.0, f"{call.func}: 0 (the metric failed: {type(error).__name__}: {error})"
    score = float(value)
    return score, f"{call.func}: {score:g}"


def _get(spec: GetterSpec, context: TaskContext) -> Any:
    try:
        return GETTERS[spec.type].fetch(context, spec.config)
    except Exception as error:
        raise _UnreadError(
            f"the {spec.type} getter failed: {type(error).__name__}: {error}"
        ) from error
