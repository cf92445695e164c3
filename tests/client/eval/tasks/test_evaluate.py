"""OSWorld's scoring: postconfig before the getters, `conj` and/or over a list of
metrics, infeasible tasks that pass only when the agent failed on purpose, and a
deliberate fail scoring 0 on any other task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from holodesk.client import actions as a
from holodesk.client.eval.tasks import evaluate, failed_on_purpose, read_task
from holodesk.client.events import Outcome
from holodesk.client.rollouts import RolloutTask, Trajectory, TrajectoryStep
from holodesk.values.actions import ActionResult, ActionStatus

from .contexts import bare_context


def _task(tmp_path: Path, evaluator: dict[str, Any]) -> Any:
    raw = {"id": "t", "instruction": "do it", "config": [], "evaluator": evaluator}
    path = tmp_path / "suite" / "t.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw))
    return read_task(path, "os")


def _scored(value: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """A metric (fuzzy_match) that gives `value` exactly: result, expected, func."""
    # indel ratio of "aa" against "ab" is 0.5, against "aa" 1, against "xy" 0.
    result = {"type": "rule", "rules": {0.0: "xy", 0.5: "ab", 1.0: "aa"}[value]}
    expected = {"type": "rule", "rules": {"expected": "aa"}}
    return result, expected


def _list(conj: str, values: list[float]) -> dict[str, Any]:
    parts = [_scored(v) for v in values]
    return {
        "func": ["fuzzy_match"] * len(values),
        "conj": conj,
        "result": [p[0] for p in parts],
        "expected": [p[1] for p in parts],
    }


@pytest.mark.parametrize(
    ("conj", "values", "score"),
    [
        ("and", [1.0, 1.0], 1.0),
        ("and", [1.0, 0.5], 0.75),  # no zero: the mean
        ("and", [0.5, 0.0, 1.0], 0.0),  # a zero: 0
        ("or", [0.0, 1.0, 0.0], 1.0),  # a one: 1
        ("or", [0.0, 0.5], 0.5),  # else the max
        ("or", [0.0, 0.0], 0.0),
    ],
)
def test_conj(tmp_path: Path, conj: str, values: list[float], score: float) -> None:
    task = _task(tmp_path, _list(conj, values))
    with bare_context(tmp_path / "env") as context:
        assert evaluate(task, context, failed_on_purpose=False).score == pytest.approx(score)


def test_and_stops_at_the_first_zero(tmp_path: Path) -> None:
    evaluator = _list("and", [0.0, 1.0])
    task = _task(tmp_path, evaluator)
    with bare_context(tmp_path / "env") as context:
        scored = evaluate(task, context, failed_on_purpose=False)
    assert scored.note == "fuzzy_match: 0"  # the second metric never ran


def test_postconfig_runs_before_the_getters(tmp_path: Path) -> None:
    evaluator = {
        "postconfig": [
            {"type": "execute", "parameters": {"command": "echo saved > ~/s.txt", "shell": True}}
        ],
        "func": "check_include_exclude",
        "result": {"type": "vm_command_line", "command": "cat ~/s.txt", "shell": True},
        "options": {"rules": {"include": ["saved"], "exclude": []}},
    }
    task = _task(tmp_path, evaluator)
    with bare_context(tmp_path / "env") as context:
        assert evaluate(task, context, failed_on_purpose=False).score == 1.0


def test_a_failed_postconfig_step_is_said_and_scoring_goes_on(tmp_path: Path) -> None:
    """As OSWorld, whose evaluate() does not check its postconfig's outcome."""
    evaluator = {
        "postconfig": [{"type": "launch", "parameters": {"command": ["no-such-program-x"]}}],
        "func": "exact_match",
        "result": {"type": "rule", "rules": 1},
        "expected": {"type": "rule", "rules": {"expected": 1}},
    }
    task = _task(tmp_path, evaluator)
    with bare_context(tmp_path / "env") as context:
        scored = evaluate(task, context, failed_on_purpose=False)
    assert scored.score == 1.0
    assert scored.note == (
        "task t: postconfig step 1 (launch) failed: 'no-such-program-x' is not installed "
        "(not found on PATH); exact_match: 1"
    )


def test_infeasible_passes_only_on_a_deliberate_fail(tmp_path: Path) -> None:
    task = _task(tmp_path, {"func": "infeasible"})
    feasible = _task(
        tmp_path,
        {
            "func": "exact_match",
            "result": {"type": "rule", "rules": 1},
            "expected": {"type": "rule", "rules": {"expected": 1}},
        },
    )
    with bare_context(tmp_path / "env") as context:
        assert evaluate(task, context, failed_on_purpose=True).score == 1.0
        assert evaluate(task, context, failed_on_purpose=False).score == 0.0
        assert evaluate(feasible, context, failed_on_purpose=False).score == 1.0
        # Any other task the agent gave up on scores 0, whatever the state shows.
        assert evaluate(feasible, context, failed_on_purpose=True).score == 0.0


def _step(number: int, actions: tuple[a.Action, ...]) -> TrajectoryStep:
    results = tuple(ActionResult(x.action_id, ActionStatus.OK) for x in actions)
    return TrajectoryStep(number, None, actions, results)


def _trajectory(outcome: Outcome, last_runs_nothing: bool) -> Trajectory:
    click = (a.Wait(action_id="1", duration_ms=1),)
    steps = [_step(1, click), _step(2, () if last_runs_nothing else click)]
    return Trajectory(RolloutTask("t"), 0, "env", outcome, tuple(steps))


def test_what_counts_as_failing_on_purpose() -> None:
    # The policy's fail decision, alone in its last step: OSWorld's FAIL.
    assert failed_on_purpose(_trajectory(Outcome.FAILED, last_runs_nothing=True))
    # FAILED while actions were pending (the daemon's step timeout): no decision.
    assert not failed_on_purpose(_trajectory(Outcome.FAILED, last_runs_nothing=False))
    for outcome in (Outcome.STEP_LIMIT, Outcome.ERROR, Outcome.TIME_LIMIT, Outcome.SUCCEEDED):
        assert not failed_on_purpose(_trajectory(outcome, last_runs_nothing=True))
    assert not failed_on_purpose(Trajectory(RolloutTask("t"), 0, "env", Outcome.FAILED))
