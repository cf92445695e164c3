"""run_rollouts against a real daemon (scripted policy, real gRPC, real recorder), on
fake backends: the scheduling, the trajectories, the rewards and their recording.

The desktops are the platform's fake backend (no display needed here); the real
X11 and web environments run in tests/e2e/test_rollouts_*.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from PIL import Image

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.frames import FramePatch, SentFrame
from holodesk.client.generation import Sampling
from holodesk.client.rollouts import (
    Finished,
    Reward,
    RolloutTask,
    Trajectory,
    as_reward,
    run_rollouts,
)
from holodesk.client.rollouts.rewards import RewardReporter
from holodesk.client.whole_frames import whole_frames
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.platform.backends import fake
from holodesk.platform.base import Backend, Region
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc
from holodesk.values.encoding import ImageEncoding
from tests.daemon.support import holo, running_daemon

CLICK = holo({"action": "click", "x": 250, "y": 500})
BAD = "not an action"
ANSWER = holo({"action": "answer", "content": "done"})


@dataclass(eq=False)
class TrackedBackend(fake.FakeBackend):
    environment: FakeEnvironment = field(kw_only=True)

    def close(self) -> None:
        self.environment.active -= 1
        super().close()


class FakeEnvironment:
    """A fake desktop per reset; counts how many sessions use it at once."""

    def __init__(self, name: str, *, broken: bool = False) -> None:
        self.name = name
        self.broken = broken
        self.started = 0
        self.active = 0
        self.most_active = 0
        self.backends: list[TrackedBackend] = []
        self.tasks: list[str] = []

    def start(self) -> None:
        self.started += 1

    def reset(self, task: RolloutTask) -> Backend:
        if self.broken:
            raise RuntimeError("the app would not start")
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        self.tasks.append(task.task)
        plain = fake.create()
        backend = TrackedBackend(
            name="fake", os="fake", screen=plain.screen, input=plain.input, environment=self
        )
        self.backends.append(backend)
        return backend

    def close(self) -> None:
        return None


def policy(outputs: list[Any]) -> ModelPolicy:
    return ModelPolicy(get_dialect("holo"), ScriptedEngine(outputs), name="scripted")


async def test_every_task_is_rolled_out_n_times_one_session_per_environment_at_a_time(
    tmp_path: Path,
) -> None:
    environments = [FakeEnvironment("e1"), FakeEnvironment("e2")]
    seen: list[Trajectory] = []
    tasks: list[str | RolloutTask] = ["first task", RolloutTask("second task", metadata={"row": 7})]
    async with running_daemon([policy([[BAD, CLICK], ANSWER])]) as daemon:
        trajectories = await run_rollouts(
            daemon.running.address,
            tasks,
            environments,
            n=3,
            sampling=Sampling(temperature=1.0, candidates=2, logprobs=True, seed=4),
            on_trajectory=seen.append,
        )
    assert [(t.task.task, t.sample) for t in trajectories] == [
        ("first task", 0),
        ("first task", 1),
        ("first task", 2),
        ("second task", 0),
        ("second task", 1),
        ("second task", 2),
    ]
    assert trajectories[3].task.metadata == {"row": 7}
    assert sorted(id(t) for t in seen) == sorted(id(t) for t in trajectories)
    assert len({t.session_id for t in trajectories}) == 6
    for environment in environments:
        assert environment.started == 1
        assert environment.most_active == 1  # never two sessions in one environment
        assert environment.active == 0  # every backend was closed
    assert sum(len(e.backends) for e in environments) == 6
    for trajectory in trajectories:
        assert trajectory.outcome is Outcome.SUCCEEDED, trajectory.reason
        assert trajectory.answer == "done"
        step, last = trajectory.steps
        # The answer alone ends the session: no Actions carried it, SessionEnded did.
        assert (last.step, last.actions, last.results) == (2, (), ())
        assert last.completion is not None
        assert last.completion.text == ANSWER
        (click,) = step.actions
        assert isinstance(click, a.Click)
        assert step.results[0].status is a.ActionStatus.OK
        assert step.generation is not None
        assert [c.parsed for c in step.generation.completions] == [False, True]
        assert step.completion is not None
        assert step.completion.text == CLICK
        assert len(step.completion.token_logprobs) == len(CLICK.encode())
        assert trajectory.logprob == 0.0  # a script is certain of every byte
        # The frame's coordinate frame, without its bytes (keep_frames is off).
        assert step.frame is not None
        assert (step.frame.width, step.frame.height) > (0, 0)
        assert step.frame.data == b""
        assert trajectory.reward is None
    # The click landed: 250/1000 of the fake 1280x800 display, at half its height.
    for environment in environments:
        for backend in environment.backends:
            assert fake.Move(320, 400) in backend.input.events


async def test_a_broken_environment_gives_error_trajectories_and_the_rest_run() -> None:
    environments = [FakeEnvironment("ok"), FakeEnvironment("broken", broken=True)]
    async with running_daemon([policy([CLICK, ANSWER])]) as daemon:
        trajectories = await run_rollouts(
            daemon.running.address, ["a", "b", "c", "d"], environments
        )
    errors = [t for t in trajectories if t.outcome is Outcome.ERROR]
    assert errors
    assert all("environment broken could not be reset" in t.reason for t in errors)
    assert all(t.environment == "broken" for t in errors)
    succeeded = [t for t in trajectories if t.outcome is Outcome.SUCCEEDED]
    assert succeeded
    assert len(errors) + len(succeeded) == 4


async def test_rewards_are_scored_on_the_final_state_and_recorded(tmp_path: Path) -> None:
    environments = [FakeEnvironment("e1")]
    checked: list[int] = []

    async def reward(finished: Finished) -> Reward:
        # The backend is still open: the click it received can be checked.
        events = finished.backend.input.events  # type: ignore[attr-defined]
        checked.append(len(events))
        return Reward(reward=0.5, success=True, note=f"{finished.environment.name} checked")

    record_dir = tmp_path / "recordings"
    async with running_daemon(
        [policy([CLICK, ANSWER])], record=True, record_dir=str(record_dir)
    ) as daemon:
        (trajectory,) = await run_rollouts(
            daemon.running.address, ["click"], environments, reward=reward
        )
    assert checked
    assert checked[0] > 0
    assert trajectory.reward == Reward(0.5, True, "e1 checked")
    assert trajectory.reward_recorded
    assert trajectory.recording_id
    manifest = json.loads((record_dir / trajectory.recording_id / "recording.json").read_text())
    assert (manifest["reward"], manifest["success"]) == (0.5, True)
    assert manifest["session_id"] == trajectory.session_id


async def test_an_unrecorded_session_keeps_its_reward_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    environments = [FakeEnvironment("e1")]
    caplog.set_level(logging.WARNING, logger="holodesk.client.rollouts.rewards")
    async with running_daemon([policy([CLICK, ANSWER])]) as daemon:
        trajectories = await run_rollouts(
            daemon.running.address, ["one", "two"], environments, reward=lambda f: True
        )
    for trajectory in trajectories:
        assert trajectory.reward == Reward(1.0, True)
        assert not trajectory.reward_recorded
        assert trajectory.recording_id == ""
    warnings = [r for r in caplog.records if "is not recorded" in r.getMessage()]
    assert len(warnings) == 1  # once per kind of refusal, not once per rollout


class RefusingAgent(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, code: grpc.StatusCode) -> None:
        self.code = code
        self.requests: list[agent_pb2.ReportRewardRequest] = []

    async def ReportReward(  # noqa: N802
        self, request: agent_pb2.ReportRewardRequest, context: Any
    ) -> agent_pb2.ReportRewardResponse:
        self.requests.append(request)
        await context.abort(self.code, "not today")
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (grpc.StatusCode.UNIMPLEMENTED, "does not record rewards"),
        (grpc.StatusCode.NOT_FOUND, "no recording of the session"),
        (grpc.StatusCode.PERMISSION_DENIED, "reporting it failed"),
    ],
)
async def test_a_refused_reward_is_a_warning_naming_why(
    code: grpc.StatusCode, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent = RefusingAgent(code)  # type: ignore[abstract]  # only ReportReward is called
    server = grpc.aio.server()
    agent_pb2_grpc.add_AgentServiceServicer_to_server(agent, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    caplog.set_level(logging.WARNING, logger="holodesk.client.rollouts.rewards")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            reporter = RewardReporter(channel)
            assert not await reporter.report("s1", Reward(success=False, note="n"))
            assert not await reporter.report("s2", Reward(reward=-1.0))
    finally:
        await server.stop(None)
    first, second = agent.requests
    assert (first.session_id, first.HasField("reward"), first.success, first.note) == (
        "s1",
        False,
        False,
        "n",
    )
    assert (second.reward, second.HasField("success")) == (-1.0, False)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert why in warning
    assert code.name in warning


async def test_kept_frames_are_whole_images() -> None:
    environments = [FakeEnvironment("e1")]
    async with running_daemon([policy([CLICK, CLICK, ANSWER])]) as daemon:
        (trajectory,) = await run_rollouts(
            daemon.running.address, ["click twice"], environments, keep_frames=True
        )
    # Two clicks, then the answer (its step carried by SessionEnded), each with its frame.
    assert len(trajectory.steps) == 3
    for step in trajectory.steps:
        assert step.frame is not None
        assert not step.frame.is_delta
        with Image.open(io.BytesIO(step.frame.data)) as image:
            assert image.size == (step.frame.width, step.frame.height)


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_delta_frames_are_rebuilt_on_their_base() -> None:
    base_image = Image.new("RGB", (40, 30), (10, 20, 30))
    patch_image = Image.new("RGB", (5, 4), (200, 0, 0))
    base = SentFrame(
        "f1",
        40,
        30,
        ImageEncoding.PNG,
        png(base_image),
        "",
        Region(0, 0, 40, 30),
        1.0,
        datetime.now(UTC),
    )
    patch = FramePatch(7, 9, 5, 4, ImageEncoding.PNG, png(patch_image))
    delta = replace(base, frame_id="f2", data=b"", base_frame_id="f1", patches=(patch,))
    unchanged = replace(base, frame_id="f3", data=b"", base_frame_id="f2", patches=())
    orphan = replace(base, frame_id="f4", data=b"", base_frame_id="gone", patches=(patch,))
    out = whole_frames([base, None, delta, unchanged, orphan])
    assert out[0] is base
    assert out[1] is None
    for rebuilt in (out[2], out[3]):
        assert rebuilt is not None
        assert not rebuilt.is_delta
        with Image.open(io.BytesIO(rebuilt.data)) as image:
            assert image.getpixel((7, 9)) == (200, 0, 0)
            assert image.getpixel((11, 12)) == (200, 0, 0)
            assert image.getpixel((12, 13)) == (10, 20, 30)
    assert out[4] is not None
    assert out[4].data == b""


def test_reward_shorthands_and_bad_arguments() -> None:
    assert as_reward(True) == Reward(1.0, True)
    assert as_reward(False) == Reward(0.0, False)
    assert as_reward(0.25) == Reward(0.25)
    assert as_reward(None) is None
    with pytest.raises(TypeError, match="not 'yes'"):
        as_reward("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty task"):
        RolloutTask("  ")
    with pytest.raises(ValueError, match="n must be 1 or more"):
        asyncio.run(run_rollouts("127.0.0.1:1", ["x"], [FakeEnvironment("e")], n=0))
    with pytest.raises(ValueError, match="unique"):
        asyncio.run(run_rollouts("127.0.0.1:1", ["x"], [FakeEnvironment("e")] * 2))
