"""Plan progress recovered from the notes and results of earlier steps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from holodesk.daemon.actions import (
    Action,
    ActionResult,
    ActionStatus,
    Click,
    HistoryStep,
    Wait,
)
from holodesk.daemon.geometry import Point
from holodesk.daemon.policies.ocr.progress import Progress, marker, progress_from_history


def _step(number: int, note: str, *statuses: ActionStatus) -> HistoryStep:
    actions = tuple(
        Action(f"a{number}.{i}", "f", Click(Point(1, 1))) for i in range(len(statuses))
    ) or (Action(f"a{number}", "", Wait(1000)),)
    results = tuple(ActionResult(a.action_id, s) for a, s in zip(actions, statuses, strict=False))
    return HistoryStep(number, actions, note=note, results=results)


OK = ActionStatus.OK


def test_markers() -> None:
    assert marker(0, 3) == "[ocr 1/3]"
    assert marker(2, 3, retry=2) == "[ocr 3/3 retry 2]"


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ([], Progress(0, 0)),
        (["[ocr 1/3] click"], Progress(1, 0)),
        (["[ocr 1/3] click", "[ocr 2/3 retry 1] waiting"], Progress(1, 1)),
        (["[ocr 1/3] a", "[ocr 2/3 retry 1] w", "[ocr 2/3 retry 2] w"], Progress(1, 2)),
        (["[ocr 1/3] a", "[ocr 2/3 retry 1] w", "[ocr 2/3] click"], Progress(2, 0)),
        # A window that lost the early steps: absolute numbers still tell.
        (["[ocr 7/9] click"], Progress(7, 0)),
        # Notes that are not ours are ignored.
        (["[ocr 1/3] a", "thinking about it", "[ocr 2/3 failed]"], Progress(1, 0)),
    ],
)
def test_progress_follows_the_markers(notes: list[str], expected: Progress) -> None:
    history = [_step(i + 1, note, OK) for i, note in enumerate(notes)]
    assert progress_from_history(history) == expected


@pytest.mark.parametrize(
    "status", [ActionStatus.FAILED, ActionStatus.REJECTED, ActionStatus.SKIPPED]
)
def test_a_step_whose_actions_did_not_run_is_retried(status: ActionStatus) -> None:
    history = [_step(1, "[ocr 1/2] click", OK), _step(2, "[ocr 2/2] type", OK, status)]
    assert progress_from_history(history) == Progress(1, 1, status.value)
    history.append(_step(3, "[ocr 2/2] type", status))
    assert progress_from_history(history) == Progress(1, 2, status.value)


def test_the_clients_error_is_kept() -> None:
    failed = _step(1, "[ocr 1/1] type", ActionStatus.FAILED)
    failed = replace(failed, results=(replace(failed.results[0], error="window closed"),))
    assert progress_from_history([failed]) == Progress(0, 1, "window closed")


def test_a_step_without_reported_results_counts_as_done() -> None:
    assert progress_from_history([_step(1, "[ocr 1/2] press")]) == Progress(1, 0)
