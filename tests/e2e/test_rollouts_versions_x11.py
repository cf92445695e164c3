"""Staleness on a real desktop: the daemon's weights change in the middle of a rollout
on Xvfb, and run_rollouts drops the trajectory that straddled the update while the
one made by a single version is kept; both were scored on what the app received.

Real: Xvfb, the demo's Tk form app, the X11 backend, the daemon and its recorder,
gRPC, the client. The engine is the test double of tests/support/versioned_engine.py
(scripted outputs, a policy version the test bumps from the client's on_step, as a
trainer's update would land between two steps).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from holodesk.client.demo.processes import FormAppProcess
from holodesk.client.events import Outcome, Started
from holodesk.client.outcome import StepRecord
from holodesk.client.rollouts import (
    ROLLOUT_OPTIONS,
    Finished,
    Reward,
    RolloutStats,
    Trajectory,
    XvfbEnvironment,
    run_rollouts,
)
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import running_daemon
from tests.support.versioned_engine import VersionedEngine

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(180)]

SCREEN = (1024, 640)
# Where the form app (its window at +60+60) has its Name entry and Submit button.
ENTRY = (430, 199)
SUBMIT = (275, 272)


def at(xy: tuple[int, int]) -> dict[str, float]:
    """Screen pixels in the holo dialect's 0-1000 coordinates."""
    return {"x": xy[0] / SCREEN[0] * 1000, "y": xy[1] / SCREEN[1] * 1000}


def holo_step(*actions: dict[str, object]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


SCRIPT = [
    holo_step({"action": "click", **at(ENTRY)}, {"action": "write", "content": "ada"}),
    holo_step({"action": "click", **at(SUBMIT)}),
    holo_step({"action": "answer", "content": "signed up ada"}),
]


@pytest.fixture
def environment(tmp_path: Path) -> Iterator[XvfbEnvironment]:
    counter = iter(range(100))

    def app(display: str) -> FormAppProcess:
        return FormAppProcess(display, tmp_path / f"form-{next(counter)}.json")

    with XvfbEnvironment(app, width=SCREEN[0], height=SCREEN[1]) as started:
        yield started


def submitted(finished: Finished) -> Reward:
    state = finished.environment.app_state.state()  # type: ignore[attr-defined]
    ok = state["submitted"] == "ada"
    return Reward(reward=1.0 if ok else 0.0, success=ok, note=f"the app got {state!r}")


async def test_the_trajectory_an_update_landed_in_is_dropped_and_counted(
    environment: XvfbEnvironment, tmp_path: Path
) -> None:
    engine = VersionedEngine(SCRIPT)
    sessions: list[str] = []

    def on_started(started: Started) -> None:
        sessions.append(started.session_id)

    def on_step(record: StepRecord) -> None:
        if len(sessions) == 2 and record.step == 1:
            engine.bump()  # the second session's steps 2 and 3 run on v2

    seen: list[Trajectory] = []
    stats = RolloutStats()
    record_dir = tmp_path / "recordings"
    policy = ModelPolicy(get_dialect("holo"), engine, name="versioned")
    async with running_daemon([policy], record=True, record_dir=str(record_dir)) as daemon:
        kept = await run_rollouts(
            daemon.running.address,
            ["sign up as ada", "sign up as ada again"],
            [environment],
            reward=submitted,
            options=replace(ROLLOUT_OPTIONS, on_started=on_started, on_step=on_step),
            on_trajectory=seen.append,
            max_version_span=0,
            stale="drop",
            stats=stats,
        )

    first, second = seen
    for trajectory in seen:
        assert trajectory.outcome is Outcome.SUCCEEDED, trajectory.reason
        # Scored on the app's own state, and the reward recorded, stale or not.
        assert trajectory.reward is not None
        assert trajectory.reward.success, trajectory.reward.note
        assert trajectory.reward_recorded
    assert [s.policy_version for s in first.steps] == [1, 1, 1]
    assert [s.policy_version for s in second.steps] == [1, 2, 2]
    assert (first.stale, second.stale) == (False, True)
    assert kept == [first]
    assert (stats.finished, stats.dropped, stats.flagged) == (2, 1, 0)
    assert stats.policy_versions == {1, 2}
