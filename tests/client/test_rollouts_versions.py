"""Policy versions in rollouts: each step says which weights made it, a trajectory its
version range, and run_rollouts' staleness bound drops or flags, and counts, those
that straddle too many updates.

The daemon, gRPC, the client, its recordings and the daemon's are real; so is
ModelPolicy. The engine is tests/support/versioned_engine.py's test double (the
scripted engine with a policy version the test bumps between or within steps);
the desktops are the platform's fake backend, as in test_rollouts.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome, Started
from holodesk.client.generation import Completion, Generation, Sampling, VersionSpan
from holodesk.client.outcome import StepRecord
from holodesk.client.rollouts import (
    ROLLOUT_OPTIONS,
    RolloutStats,
    RolloutTask,
    Trajectory,
    TrajectoryStep,
    run_rollouts,
)
from holodesk.client.rollouts.staleness import check_bound, is_stale
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.data.report import render_report
from holodesk.data.stepview import LoadedRecording
from tests.client.test_rollouts import ANSWER, CLICK, FakeEnvironment
from tests.daemon.support import running_daemon
from tests.support.versioned_engine import IMAGE_TOKEN, VersionedEngine, prompt_ids

# Each session: two clicks, then the answer (step 3, carried by SessionEnded).
SCRIPT = [CLICK, CLICK, ANSWER]
TASKS = ["steady", "drift", "straddle"]


# The rule, on hand-built trajectories -----------------------------------------------


def step(number: int, *spans: tuple[int, int, int]) -> TrajectoryStep:
    completion = Completion("out", versions=tuple(VersionSpan(*s) for s in spans))
    generation = Generation((completion,), policy_version=completion.policy_version)
    return TrajectoryStep(number, None, (), (), generation=generation)


def trajectory(*steps: TrajectoryStep) -> Trajectory:
    return Trajectory(RolloutTask("t"), 0, "e", Outcome.SUCCEEDED, steps=steps)


def test_a_trajectory_knows_its_version_range_and_the_bound_reads_it() -> None:
    one = trajectory(step(1, (4, 0, 5)), step(2, (4, 0, 5)))
    assert (one.min_policy_version, one.max_policy_version, one.version_span) == (4, 4, 0)
    assert [s.policy_version for s in one.steps] == [4, 4]
    assert not one.mixed_versions

    # A step straddling an update counts its older tokens: 3..6 is a span of 3.
    wide = trajectory(step(1, (3, 0, 2), (4, 2, 5)), step(2, (6, 0, 5)))
    assert wide.policy_versions == {3, 4, 6}
    assert (wide.min_policy_version, wide.max_policy_version, wide.version_span) == (3, 6, 3)
    assert wide.steps[0].policy_version == 4  # the newest of its completion
    assert wide.steps[0].mixed_versions
    assert not wide.steps[1].mixed_versions
    assert wide.mixed_versions
    assert [is_stale(wide, k) for k in (None, 0, 2, 3, 4)] == [False, True, True, False, False]

    # No versions (a policy without a model, or before any step): never stale.
    plain = trajectory(TrajectoryStep(1, None, (), ()), step(2))
    assert plain.steps[0].policy_version == 0
    assert plain.steps[0].versions == frozenset()
    assert (plain.min_policy_version, plain.max_policy_version, plain.version_span) == (
        None,
        None,
        0,
    )
    assert not is_stale(plain, 0)

    # Version 0 is a version (an updatable engine as it started), not "none".
    from_start = trajectory(step(1, (0, 0, 3)), step(2, (1, 0, 3)))
    assert (from_start.min_policy_version, from_start.version_span) == (0, 1)
    assert is_stale(from_start, 0)


def test_stats_count_what_the_bound_did() -> None:
    stats = RolloutStats()
    stale = replace(trajectory(step(1, (1, 0, 2), (2, 2, 4))), stale=True)
    fresh = trajectory(step(1, (2, 0, 4)))
    stats.count(stale, "drop")
    stats.count(fresh, "drop")
    stats.count(stale, "flag")
    assert (stats.finished, stats.dropped, stats.flagged, stats.stale, stats.mixed) == (
        3,
        1,
        1,
        2,
        2,
    )
    assert stats.policy_versions == {1, 2}


def test_a_bound_that_cannot_be_applied_is_refused() -> None:
    with pytest.raises(ValueError, match="max_version_span must be 0 or more"):
        check_bound(-1, "drop")
    with pytest.raises(ValueError, match="stale must be 'drop' or 'flag', got 'keep'"):
        check_bound(1, "keep")
    check_bound(None, "flag")


# Through a real daemon -----------------------------------------------------------------


def versioned_policy(engine: VersionedEngine) -> ModelPolicy:
    return ModelPolicy(get_dialect("holo"), engine, name="versioned")


def drifting(engine: VersionedEngine) -> tuple[Callable[[Started], None], Any]:
    """on_started and on_step hooks that change the engine's weights as a trainer
    would while sessions run, one environment running the TASKS in order:
    "steady" runs on v1 alone; in "drift" an update lands between steps 1 and 2
    (steps by v1, v2, v2); in "straddle" one lands while step 2 is sampled (v2,
    v2+v3, v3). on_step runs before the client sends the next observation, so the
    next step is decided after the change."""
    sessions: list[str] = []

    def on_started(started: Started) -> None:
        sessions.append(started.session_id)

    def on_step(record: StepRecord) -> None:
        if record.step != 1:
            return
        if len(sessions) == 2:
            engine.bump()
        elif len(sessions) == 3:
            engine.straddle_next()

    return on_started, on_step


async def roll(
    engine: VersionedEngine,
    *,
    daemon_config: dict[str, Any] | None = None,
    record_dir: Path | None = None,
    **kwargs: Any,
) -> tuple[list[Trajectory], list[Trajectory]]:
    """run_rollouts over TASKS on one environment: (returned, seen by on_trajectory)."""
    on_started, on_step = drifting(engine)
    options = replace(
        ROLLOUT_OPTIONS, on_started=on_started, on_step=on_step, record_dir=record_dir
    )
    seen: list[Trajectory] = []
    async with running_daemon([versioned_policy(engine)], **(daemon_config or {})) as daemon:
        returned = await run_rollouts(
            daemon.running.address,
            TASKS,
            [FakeEnvironment("e1")],
            options=options,
            on_trajectory=seen.append,
            **kwargs,
        )
    return returned, seen


async def test_every_step_says_its_version_and_stale_trajectories_are_flagged() -> None:
    stats = RolloutStats()
    trajectories, seen = await roll(
        VersionedEngine(SCRIPT), max_version_span=0, stale="flag", stats=stats
    )
    assert [t.task.task for t in trajectories] == TASKS
    assert all(t.outcome is Outcome.SUCCEEDED for t in trajectories), trajectories
    steady, drift, straddle = trajectories
    assert [s.policy_version for s in steady.steps] == [1, 1, 1]
    assert [s.policy_version for s in drift.steps] == [1, 2, 2]
    assert [s.policy_version for s in straddle.steps] == [2, 3, 3]
    assert [s.policy_label for s in drift.steps] == ["step-10", "step-20", "step-20"]
    # The straddling step: its completion's tokens by v2 then v3, the step stamped v3.
    middle = straddle.steps[1]
    assert middle.versions == {2, 3}
    assert middle.mixed_versions
    assert middle.completion is not None
    assert [span.version for span in middle.completion.versions] == [2, 3]
    assert middle.completion.versions[-1].end == len(CLICK.encode())

    assert [(t.min_policy_version, t.max_policy_version) for t in trajectories] == [
        (1, 1),
        (1, 2),
        (2, 3),
    ]
    assert [t.version_span for t in trajectories] == [0, 1, 1]
    assert [t.mixed_versions for t in trajectories] == [False, False, True]
    assert [t.stale for t in trajectories] == [False, True, True]
    assert [t.stale for t in seen] == [False, True, True]
    assert (stats.finished, stats.flagged, stats.dropped, stats.mixed) == (3, 2, 0, 1)
    assert stats.policy_versions == {1, 2, 3}


async def test_drop_leaves_stale_trajectories_out_but_scores_records_and_reports_them(
    tmp_path: Path,
) -> None:
    record_dir = tmp_path / "recordings"
    stats = RolloutStats()
    scored: list[tuple[str, bool]] = []

    def reward(finished: Any) -> bool:
        scored.append((finished.trajectory.task.task, finished.trajectory.stale))
        return True

    returned, seen = await roll(
        VersionedEngine(SCRIPT),
        daemon_config={"record": True, "record_dir": str(record_dir)},
        max_version_span=0,
        stale="drop",
        stats=stats,
        reward=reward,
    )
    assert [t.task.task for t in returned] == ["steady"]
    assert not returned[0].stale
    # Every session ran and was scored (the reward function sees the flag) ...
    assert scored == [("steady", False), ("drift", True), ("straddle", True)]
    # ... on_trajectory heard all three, the dropped ones flagged, rewards recorded.
    assert [(t.task.task, t.stale, t.reward_recorded) for t in seen] == [
        ("steady", False, True),
        ("drift", True, True),
        ("straddle", True, True),
    ]
    for dropped in seen[1:]:
        manifest = json.loads((record_dir / dropped.recording_id / "recording.json").read_text())
        assert manifest["success"] is True
    assert (stats.finished, stats.dropped, stats.flagged, stats.stale) == (3, 2, 0, 2)


async def test_a_looser_bound_keeps_what_a_tighter_one_drops() -> None:
    stats = RolloutStats()
    returned, _ = await roll(VersionedEngine(SCRIPT), max_version_span=1, stale="drop", stats=stats)
    assert [t.task.task for t in returned] == TASKS
    assert not any(t.stale for t in returned)
    assert (stats.dropped, stats.flagged) == (0, 0)
    unbounded, _ = await roll(VersionedEngine(SCRIPT), stale="drop")
    assert [t.task.task for t in unbounded] == TASKS


@pytest.mark.parametrize("keep_ids", [True, False])
async def test_prompt_token_ids_reach_the_trajectory_when_asked(keep_ids: bool) -> None:
    engine = VersionedEngine(SCRIPT)
    trajectories, _ = await roll(engine, sampling=Sampling(prompt_token_ids=keep_ids))
    steps = [s for t in trajectories for s in t.steps]
    assert len(steps) == len(engine.requests) == 9  # one engine call per step
    for trajectory_step, request in zip(steps, engine.requests, strict=True):
        generation = trajectory_step.generation
        assert generation is not None
        if keep_ids:
            # Exactly the ids the engine made of this step's prompt, images included.
            assert generation.prompt_token_ids == prompt_ids(request)
            assert IMAGE_TOKEN in generation.prompt_token_ids
        else:
            assert generation.prompt_token_ids == ()


async def test_recordings_and_their_report_keep_each_steps_version(tmp_path: Path) -> None:
    """The daemon's recording and the client's both keep the Actions message's
    generation (uint64 versions as JSON strings); the report shows them."""
    daemon_dir, client_dir = tmp_path / "daemon", tmp_path / "client"
    trajectories, _ = await roll(
        VersionedEngine(SCRIPT),
        daemon_config={"record": True, "record_dir": str(daemon_dir)},
        record_dir=client_dir,
        sampling=Sampling(prompt_token_ids=True, logprobs=True),
    )
    straddle = trajectories[2]
    daemon_recording = LoadedRecording.load(daemon_dir / straddle.recording_id)
    (client_path,) = [
        p for p in client_dir.iterdir() if straddle.session_id in p.name and p.is_dir()
    ]
    client_recording = LoadedRecording.load(client_path)
    for recording in (daemon_recording, client_recording):
        steps = recording.steps()
        # Step 3 (the answer) ended the session: the client got no Actions for it.
        generations = [s.generation for s in steps if s.generation is not None]
        assert [g["policy_version"] for g in generations[:2]] == ["2", "3"]
        middle = generations[1]
        assert middle["policy_label"] == "step-30"
        spans = middle["completions"][0]["versions"]
        assert [s["version"] for s in spans] == ["2", "3"]
        assert middle["prompt_token_ids"] == list(
            straddle.steps[1].generation.prompt_token_ids  # type: ignore[union-attr]
        )

    page = render_report(daemon_recording)
    assert "<dt>Policy versions</dt><dd>v2, v3</dd>" in page
    assert "<td>policy version</td><td>v2 (step-20)</td>" in page
    assert "<td>policy version</td><td>v3 (step-30) · tokens from v2, v3</td>" in page
