"""Rollouts on four private X displays at once: four Xvfb servers, each with the demo's
Tk form app, one real daemon with the OCR policy, run_rollouts driving them all.

Each task types its own name; the reward function reads what each app actually
received, so a click or a keystroke that reached another display would show as
the wrong name in the wrong app.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.demo.processes import FormAppProcess
from holodesk.client.events import Outcome
from holodesk.client.rollouts import (
    AppFactory,
    Finished,
    Reward,
    RolloutTask,
    XvfbEnvironment,
    run_rollouts,
)
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from tests.daemon.support import running_daemon

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(300)]

NAMES = ("ada", "grace", "edsger", "barbara")


def form_app(state_dir: Path, name: str) -> AppFactory:
    """A fresh form app per reset, on the display given, with its own state file."""
    counter = iter(range(1000))

    def start(display: str) -> FormAppProcess:
        return FormAppProcess(display, state_dir / f"{name}-{next(counter)}.json")

    return start


@pytest.fixture
def environments(tmp_path: Path) -> Iterator[list[XvfbEnvironment]]:
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                XvfbEnvironment(form_app(tmp_path, f"env{i}"), width=1024, height=640)
            )
            for i in range(4)
        ]


def submitted_name(finished: Finished) -> Reward:
    app = finished.environment.app_state  # type: ignore[attr-defined]
    state = app.state()
    expected = finished.trajectory.task.metadata["name"]
    ok = state["submitted"] == expected
    return Reward(reward=1.0 if ok else 0.0, success=ok, note=f"the app got {state!r}")


async def test_four_sessions_on_four_displays_each_act_in_their_own(
    environments: list[XvfbEnvironment],
) -> None:
    displays = {e.display for e in environments}
    assert len(displays) == 4  # four X servers
    tasks = [
        RolloutTask(
            f'type "{name}" into "Name"; click "Submit"; answer "signed up {name}"',
            metadata={"name": name},
        )
        for name in NAMES
    ]
    async with running_daemon([OcrPolicy()]) as daemon:
        trajectories = await run_rollouts(
            daemon.running.address, tasks, environments, reward=submitted_name, max_steps=10
        )

    assert [t.task.metadata["name"] for t in trajectories] == list(NAMES)
    assert len({t.environment for t in trajectories}) == 4  # all four ran at once
    for trajectory in trajectories:
        name = trajectory.task.metadata["name"]
        assert trajectory.outcome is Outcome.SUCCEEDED, trajectory.reason
        assert trajectory.answer == f"signed up {name}"
        assert trajectory.reward is not None
        assert trajectory.reward.success, trajectory.reward.note
        # Complete: every step has its frame's coordinate frame and every result.
        assert trajectory.steps
        for number, step in enumerate(trajectory.steps, start=1):
            assert step.step == number
            assert step.frame is not None
            assert (step.frame.width, step.frame.height) == (1024, 640)
            assert len(step.results) == len(step.actions)
            assert all(r.status.name == "OK" for r in step.results)
            assert step.generation is None  # the OCR policy has no model
    # And each app, read directly: its own name, nobody else's.
    by_name = {e.name: e for e in environments}
    for trajectory in trajectories:
        app = by_name[trajectory.environment].app_state
        assert app.state()["name"] == trajectory.task.metadata["name"]
